"""The lookup encoder's command never writes over a file that exists (a model, the data)."""

from ident3d.baselines.lookup import main


def test_the_lookup_command_refuses_an_existing_output(tmp_path, capsys):
    taken = tmp_path / "someones-model.pt2"
    taken.write_bytes(b"not ours")
    assert main([str(tmp_path), str(taken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "exists" in err and err.count("\n") == 1
    assert taken.read_bytes() == b"not ours"
