"""The synthetic plan: parsed and checked, run by the experiments' driver (shared, resumable)."""

from __future__ import annotations

import json

import pytest

from ident3d.baselines.synthetic.sweep import load_plan, parse_plan, sweep
from ident3d.cli import main
from ident3d.errors import TrainingError

TINY = """
[[sweep]]
name = "tiny"
rows = ["T1.6", "T2.6"]
seeds = [0, 1]
budget = { steps = 4, batch_size = 16, eval_every = 2 }

[[sweep]]
name = "tiny-identity"
column = "identity"
rows = ["T2.1"]
seeds = [0]

[[sweep]]
name = "gpu-only"
default = false
rows = ["T2.1"]
seeds = [0]
budget = { steps = 300003, batch_size = 6144 }
"""


def test_the_package_plan_names_known_rows_and_every_bad_plan_is_refused_by_name(tmp_path):
    plan = load_plan()
    assert {s.name for s in plan} >= {"table", "aninfonce"}
    assert all(len(s.seeds) >= 3 for s in plan if s.name == "table")
    for text, words in [
        ("[[sweep]]\nname = 'x'\nrows = ['T9.9']\nseeds = [0]", "unknown synthetic row 'T9.9'"),
        ("[[sweep]]\nname = 'x'\nrows = ['T2.1']\nseeds = [0]\nbudget = { step = 3 }", "budget must be"),
        ("[[sweep]]\nname = 'x'\nrows = ['T2.1']\nseeds = [0]\nbudget = { steps = '3' }", "steps = '3'"),
        ("[[sweep]]\nname = 'x'\nrows = ['T2.1']\nseeds = [-1]", "seeds >= 0"),
        ("[[sweep]]\nname = 'x'\nrows = ['T2.1']\nseeds = [0]\ncolumn = 'best'", "column = 'best'"),
        ("[[sweep]]\nname = 'x'\nrows = ['T2.1']\nseeds = [0]\ndefault = 'no'", "default = 'no'"),
        ("sweep = [", "not TOML"),
        ("", "no [[sweep]] table"),
    ]:
        with pytest.raises(TrainingError) as caught:
            parse_plan(text, "crafted.toml")
        assert "crafted.toml" in str(caught.value) or "T9.9" in str(caught.value)
        assert words in str(caught.value)
    (tmp_path / "big.toml").write_bytes(b"#" * (2 << 20))
    with pytest.raises(TrainingError, match="big.toml: not a readable plan"):
        load_plan(tmp_path / "big.toml")


@pytest.mark.slow
def test_a_sweep_runs_what_is_missing_skips_what_is_claimed_and_then_has_nothing_to_do(tmp_path, capsys):
    from ident3d.baselines.driver import _owner

    plan, out = tmp_path / "plan.toml", tmp_path / "results"
    plan.write_text(TINY)
    out.mkdir()
    busy = out / ".T2.6-seed1-b16-n4-lr0.0001.lock"
    busy.write_text(_owner())  # another (live) process is on this run
    assert main(["-q", "synthetic", "sweep", "--plan", str(plan), "--out", str(out)]) == 0
    written = sorted(p.name for p in out.glob("*.json"))
    # the sweep marked default = false (the paper's budget) did not run
    assert written == ["T1.6-seed0-b16-n4-lr0.0001.json", "T1.6-seed1-b16-n4-lr0.0001.json",
                       "T2.1-identity-seed0.json", "T2.6-seed0-b16-n4-lr0.0001.json"]
    assert json.loads((out / written[3]).read_text())["budget"]["steps"] == 4
    busy.unlink()
    capsys.readouterr()
    assert sweep(parse_plan(TINY, "tiny"), out, only="tiny", progress=False) == [
        out / "T2.6-seed1-b16-n4-lr0.0001.json"]
    assert sweep(parse_plan(TINY, "tiny"), out, progress=False) == []
    assert not list(out.glob(".*"))  # no lock or checkpoint left behind
    assert main(["synthetic", "sweep", "--plan", str(plan), "--out", str(out), "--only", "nope"]) == 1
    assert "no sweep named 'nope'" in capsys.readouterr().err


SPREAD = """
[[sweep]]
name = "spread"
rows = ["T1.6"]
seeds = [0, 1, 2, 3]
budget = { steps = 30, batch_size = 32, eval_every = 30 }
"""


@pytest.mark.slow
def test_a_sweep_over_devices_runs_one_process_per_device_and_each_run_once(tmp_path, capsys):
    # two processes on the CPU stand in for two GPUs (`--devices all` names every visible one)
    plan, out = tmp_path / "plan.toml", tmp_path / "results"
    plan.write_text(SPREAD)
    command = ["-q", "synthetic", "sweep", "--plan", str(plan), "--out", str(out)]
    assert main([*command, "--devices", "cpu,cpu"]) == 0
    printed = capsys.readouterr().out.splitlines()
    by_process = {line.rsplit("(", 1)[1] for line in printed}
    assert by_process == {"cpu #0)", "cpu #1)"}, printed  # both processes took runs
    written = sorted(line.split()[0] for line in printed)
    assert written == sorted(str(p) for p in out.glob("*.json")) and len(written) == 4  # each run once
    assert not list(out.glob(".*"))
    for argv, words in [(["--devices", "cpu,cpu", "--device", "cpu"], "choose one"),
                        (["--devices", "all"], "--devices all: torch sees no CUDA GPU"),
                        (["--devices", "cpu,,cpu"], "expected all or a comma list")]:
        assert main(["synthetic", "sweep", "--plan", str(plan), "--out", str(tmp_path / "x"), *argv]) == 1
        assert words in capsys.readouterr().err


@pytest.mark.slow
def test_a_stacked_sweep_trains_each_rows_unfinished_seeds_as_one_job(tmp_path, capsys):
    plan, out = tmp_path / "plan.toml", tmp_path / "results"
    plan.write_text(SPREAD.replace("steps = 30", "steps = 4").replace("eval_every = 30", "eval_every = 4"))
    out.mkdir()
    budget = "b32-n4-lr0.0001"
    assert main(["-q", "synthetic", "run", "--row", "T1.6", "--seeds", "3", "--steps", "4",
                 "--batch-size", "32", "--eval-every", "4", "--out", str(out)]) == 0  # one seed done alone
    capsys.readouterr()
    assert main(["-q", "synthetic", "sweep", "--plan", str(plan), "--out", str(out), "--stacked"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out / f"T1.6-seed{seed}-{budget}.json") for seed in (0, 1, 2)]
    results = {seed: json.loads((out / f"T1.6-seed{seed}-{budget}.json").read_text()) for seed in range(4)}
    assert [results[seed].get("stacked_seeds") for seed in range(4)] == [[0, 1, 2]] * 3 + [None]
    assert not list(out.glob(".*"))  # no lock or checkpoint left behind
    assert main(["-q", "synthetic", "sweep", "--plan", str(plan), "--out", str(out), "--stacked"]) == 0
    assert capsys.readouterr().out == ""  # nothing left to run
    for bad in ("0,0", "1,-2", "a", ""):
        with pytest.raises(SystemExit) as stopped:
            main(["synthetic", "run", "--row", "T1.6", "--seeds", bad, "--out", str(out)])
        assert stopped.value.code == 2
        assert "expected distinct integers >= 0 separated by commas" in capsys.readouterr().err
