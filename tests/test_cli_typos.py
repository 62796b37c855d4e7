"""A typo in a name the package knows (preset, render preset, protocol, variant, track) gets one
``error:`` line with the nearest valid name, not a usage block."""

from __future__ import annotations

import pytest

from ident3d.cli import main
from ident3d.tracks import TrackError, get_track


@pytest.mark.parametrize("argv, suggestion", [
    (["train", "--preset", "normal-bx", "--data", "d"], "Did you mean 'normal-box'?"),
    (["render", "--preset", "preveiw", "--out", "o"], "Did you mean 'preview'?"),
    (["evaluate", "--protocol", "cl-ica-2012", "--data", "d", "--model", "m.pt2"],
     "Did you mean 'cl-ica-2021'?"),
    (["info", "--variant", "legacyy"], "Did you mean 'legacy'?"),
])
def test_a_typo_gets_one_line_and_the_nearest_name(argv, suggestion, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ident3d ") and suggestion in lines[0], lines
    assert f"`ident3d {argv[0]} --help`" in lines[0]


def test_an_unknown_track_names_the_nearest():
    with pytest.raises(TrackError, match="Did you mean '3dident-v2-64'"):
        get_track("3dident-v2-46")
    with pytest.raises(TrackError) as far:
        get_track("mnist")
    assert "Did you mean" not in str(far.value)


def test_an_unknown_synthetic_row_names_the_nearest(capsys):
    assert main(["synthetic", "run", "--row", "T1.13", "--seed", "0", "--out", "unused"]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown synthetic row 'T1.13'" in lines[0]
    assert "Did you mean 'T1." in lines[0]


def test_a_data_folder_that_is_not_there_is_named_as_missing(tmp_path, capsys):
    assert main(["audit", "--data", str(tmp_path / "nope")]) == 1
    assert f"error: {tmp_path / 'nope'}: no such folder. Fix:" in capsys.readouterr().err
    assert main(["audit", "--data", str(tmp_path)]) == 1
    assert "no split found" in capsys.readouterr().err


def test_the_old_name_of_a_renamed_verb_names_the_new_one(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["verify", "--data", "data/3dident"])
    assert stop.value.code == 2
    assert "`verify` is now `audit`, with the same options" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["leaderboard", "build", "--check", "-q"],
                                  ["-q", "leaderboard", "build", "--check"],
                                  ["leaderboard", "keyring", "list", "--quiet"]])
def test_the_common_flags_are_taken_after_an_action_too(argv, capsys):
    from ident3d.cli import build_parser

    args = build_parser().parse_args(argv)
    assert args.quiet is True


def test_a_track_called_by_its_nickname_names_it_before_any_image_is_read(tmp_path, capsys):
    assert main(["audit", "--data", str(tmp_path / "nowhere"), "--track", "cpu-track"]) != 0
    err = capsys.readouterr().err
    assert "unknown track 'cpu-track'" in err and "Did you mean '3dident-v2-64@1' (the CPU track)?" in err
    assert "nowhere" not in err  # the track is judged first


def test_a_split_folder_given_as_the_dataset_root_is_named_as_such(fake_split, capsys):
    root, split = fake_split, fake_split / "train"
    assert main(["audit", "--data", str(split), "--quick"]) != 0
    err = capsys.readouterr().err
    assert f"this is the split '{split.name}' itself, not a dataset root" in err
    assert f"--data {root} (with --split {split.name})" in err
