"""Verified means unseen (docs/submissions.md): a model that memorised the public test split scores
perfectly on it and collapses on a fresh draw, and its memorisation gap is flagged; an honest
model's gap sits inside its interval. Built from the CPU track's real rendered test split."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import processes_in_group

from ident3d import evaluation
from ident3d import fresh as fresh_module
from ident3d.baselines.lookup import export_lookup
from ident3d.baselines.pixels import export_pixel_readout
from ident3d.evaluation import evaluate, evaluate_protocols

pytestmark = [pytest.mark.blender, pytest.mark.slow]
FRESH = 300


@pytest.fixture(scope="module")
def lookup_model(cpu_track_data, tmp_path_factory):
    return export_lookup(cpu_track_data, tmp_path_factory.mktemp("lookup") / "lookup.pt2")


def test_a_memorising_model_collapses_on_a_fresh_draw_and_is_flagged(cpu_track_data, lookup_model):
    result = evaluate(lookup_model, cpu_track_data, fresh=FRESH, progress=False).document
    assert result["dataset"]["track"] == "3dident-v2-64@1"
    assert result["metrics"]["linear_r2"] > 0.999 and result["metrics"]["mcc_pearson"] > 0.999
    fresh = result["fresh"]
    assert fresh["seed_source"] == "entropy" and fresh["n"] == FRESH and fresh["memorised"]
    assert fresh["metrics"]["linear_r2"] < 0.8  # far below its public score
    gap = fresh["gap"]["linear_r2"]
    assert fresh["test"]["name"] == "ident3d-gap-test/1" and gap["p"] < 0.001  # the smallest p of 1,999
    assert gap["ci95"][0] > 0.1 and gap["above_chance"] and gap["p_holm"] <= fresh["test"]["level"]


def test_an_honest_model_keeps_its_score_and_a_revealed_draw_re_renders(cpu_track_data, tmp_path,
                                                                         monkeypatch):
    # under cl-ica-2021 (the memorising model above takes the default protocol's path): both protocols'
    # fresh draws are covered, and its public scoring takes a third of the default's time
    model = export_pixel_readout(tmp_path / "pixels.pt2", 64)
    kwargs = {"fresh": FRESH, "fresh_seed": 12345, "progress": False}
    first = evaluate(model, cpu_track_data, protocol="cl-ica-2021", **kwargs).document
    fresh = first["fresh"]
    assert fresh["seed_source"] == "given" and not fresh["memorised"]
    for g in fresh["gap"].values():
        assert g["ci95"][0] <= g["gap"] <= g["ci95"][1] and g["ci95"][0] <= 0 <= g["ci95"][1], g
    # anyone can re-render the draw and re-score it; both protocols at once render and encode it once
    renders, encodings = count_calls(monkeypatch, fresh_module, "render_draw"), count_calls(
        monkeypatch, evaluation, "features")
    both = evaluate_protocols(model, cpu_track_data, ("ident3d-eval-v1", "cl-ica-2021"), **kwargs)
    assert (len(renders), len(encodings)) == (1, 2)  # the draw once; the public split and the draw
    again = both["cl-ica-2021"].document
    assert again["fresh"]["metrics"] == fresh["metrics"] and again["fresh"]["gap"] == fresh["gap"]
    assert again["metrics"] == first["metrics"]
    other = both["ident3d-eval-v1"].document
    assert other["protocol"] == "ident3d-eval-v1" and other["fresh"]["seed"] == 12345
    assert other["fresh"]["n"] == FRESH and other["model"]["sha256"] == first["model"]["sha256"]


def count_calls(monkeypatch, module, name: str) -> list[tuple]:
    """Replace ``module.name`` by a wrapper that records each call's arguments; returns the record."""
    calls, original = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_closing_a_draw_still_rendering_ends_its_processes_and_removes_its_folder():
    """The evaluator renders the draw beside the public split's scoring and closes it when that
    fails: nothing of the render may outlive the close."""
    from ident3d.errors import RenderError
    from ident3d.tracks import get_track

    before = set(multiprocessing.active_children())
    draw = fresh_module.BackgroundDraw(get_track("3dident-v2-64"), 2000, 1, ("test",), workers=2)
    images = draw.root / "test" / "images"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(images.glob("[!.]*.png"))) < 4:
        time.sleep(0.05)
    assert len(list(images.glob("[!.]*.png"))) >= 4, "the draw never started rendering"
    draw.close()
    assert not draw.root.exists()
    assert set(multiprocessing.active_children()) <= before
    with pytest.raises(RenderError, match="stopped before it finished"):
        draw.wait()


@pytest.mark.parametrize(("sent", "to_group", "code", "said"), [
    (signal.SIGINT, True, 130, "error: interrupted. Fix: re-run the same command; finished work is kept."),
    (signal.SIGTERM, False, 143, "error: stopped by SIGTERM. Fix: re-run the same command; finished work "
                                 "is kept.")], ids=["ctrl_c", "sigterm"])  # SIGHUP takes SIGTERM's path
def test_a_signal_during_a_fresh_evaluation_leaves_no_process_and_no_folder(cpu_track_data, tmp_path, sent,
                                                                            to_group, code, said):
    """Ctrl-C reaches the whole foreground group, SIGTERM (a scheduler; SIGHUP, a closed terminal, has
    the same handler) the command alone, while the draw renders beside the public split: one error
    line, and the render's processes, its folder and the sandbox's folders are gone."""
    model = export_pixel_readout(tmp_path / "pixels.pt2", 64)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ident3d.cli", "-q", "evaluate", "--model", str(model), "--data",
         str(cpu_track_data), "--fresh", "2000", "--out", str(tmp_path / "result.json")],
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(scratch.glob("ident3d-fresh-*/test/images/[!.]*.png")):
        time.sleep(0.05)
    assert list(scratch.glob("ident3d-fresh-*/test/images/[!.]*.png")), "the draw never started rendering"
    if to_group:
        os.killpg(proc.pid, sent)
    else:
        os.kill(proc.pid, sent)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip().splitlines() == [said]
    time.sleep(0.5)
    assert processes_in_group(proc.pid) == []
    assert not list(scratch.glob("ident3d-*")) and not (tmp_path / "result.json").exists()


def test_fresh_needs_a_rendered_track(tmp_path, lookup_model):
    from conftest import write_fake_split

    from ident3d.errors import DatasetError

    write_fake_split(tmp_path / "data", "test", n=20, size=64)
    with pytest.raises(DatasetError, match="not a track's split"):
        evaluate(lookup_model, tmp_path / "data", fresh=FRESH, progress=False)


def test_a_split_with_one_percent_of_its_images_swapped_is_not_the_track(cpu_track_data, tmp_path, capsys):
    """688 re-rendered images (tracks.toml) catch 50 swapped of 5,000 with probability above 99.9%.
    The swaps avoid the images the pixel fingerprint reads, so the re-render is what catches them."""
    from ident3d.cli import main

    root = tmp_path / "altered"
    shutil.copytree(cpu_track_data / "test", root / "test")
    images = sorted((root / "test/images").iterdir())
    swapped = np.random.default_rng().choice(np.arange(256, len(images)), size=len(images) // 100,
                                             replace=False)
    for i, j in zip(swapped, np.roll(swapped, 1), strict=True):  # each takes another's bytes
        images[i].write_bytes((cpu_track_data / "test/images" / images[j].name).read_bytes())
    manifest = json.loads((root / "test/manifest.json").read_text())
    manifest["files"] = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in images}
    (root / "test/manifest.json").write_text(json.dumps(manifest))  # the swapper rewrites the checksums too
    assert main(["-q", "audit", "--data", str(root), "--split", "test", "--track", "3dident-v2-64"]) == 1
    out = capsys.readouterr().out
    assert "test: 5000 images checked, 0 problems" in out  # the layout is intact: only the track check fails
    assert "differs from a fresh render of its latents" in out and "688 images drawn at random" in out


def test_the_memorising_model_is_not_a_verified_rank_one(cpu_track_data, lookup_model, tmp_path,
                                                         monkeypatch, capsys):
    """`leaderboard add --checkpoint` scores a fresh draw of the track's minimum size and signs what it
    measured; the table ranks the verified row by the draw; `rescore` re-renders that draw from its
    revealed seed and confirms every number (which numbers it compares: tests/test_verification.py)."""
    from ident3d.cli import main
    from ident3d.leaderboard.companions import companion_metrics
    from ident3d.leaderboard.entries import ENTRIES_DIR, load_entries
    from ident3d.leaderboard.markdown import render_markdown
    from ident3d.leaderboard.ranking import ranked_tables, signer

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    entries = tmp_path / "leaderboard" / "entries"
    shutil.copytree(ENTRIES_DIR, entries)
    shutil.copytree(ENTRIES_DIR.parent / "verifiers", entries.parent / "verifiers")
    result = evaluate(lookup_model, cpu_track_data, name="lookup", progress=False)
    result.save(tmp_path / "lookup.json")
    assert main(["-q", "leaderboard", "add", str(tmp_path / "lookup.json"), "--id", "Mallory2026Lookup",
                 "--checkpoint", str(lookup_model), "--data", str(cpu_track_data), "--verifier", "tester",
                 "--entries", str(entries)]) == 0
    assert not (entries.parent / "verifiers" / "tester.json").exists()  # never into the keyring
    said = capsys.readouterr().out
    assert "verified on your copy only" in said and "a maintainer re-verifies" in said
    claim = next(e for e in load_entries(entries) if e["id"] == "Mallory2026Lookup")
    assert signer(claim) is None and "not in the keyring" in claim.proof.problem
    # on this copy, the maintainer's command adds the submitter's key: now it is verified here
    assert main(["-q", "leaderboard", "keyring", "add", "tester", "--holder", "a tester", "--role", "person",
                 "--kept", "this test's config folder", "--entries", str(entries)]) == 0
    board = load_entries(entries)
    entry = next(e for e in board if e["id"] == "Mallory2026Lookup")
    assert signer(entry) == "tester" and entry["result"]["fresh"]["memorised"]
    assert entry["result"]["fresh"]["n"] == 2000  # the track's fresh_images, at least its fresh_min
    drawn = entry["result"]["fresh"]  # every number the verified row shows was scored on the draw
    assert drawn["metrics"]["nonlinear_r2"] is not None and drawn["per_latent"][0]["mcc_spearman"] is not None
    assert drawn["dci"]["protocol"] == "ident3d-dci"
    assert drawn["extrapolation"]["protocol"] == "ident3d-extrapolation"
    shown = companion_metrics(entry)
    assert shown["dci_informativeness"] == drawn["dci"]["informativeness"]
    assert shown["extrapolation_linear_r2"] == drawn["extrapolation"]["linear_r2"]
    # the lookup table extrapolates on the public split only
    assert shown["extrapolation_linear_r2"] < entry["result"]["extrapolation"]["linear_r2"]
    assert entry["metrics"]["linear_r2"] > 0.999  # its public score stays on record
    table = ranked_tables(board)[("3dident-v2-64@1", "ident3d-eval-v1")]
    rank = next(i for i, row in enumerate(table, 1) if row["id"] == "Mallory2026Lookup")
    assert rank > 1, "a lookup table of the public split ranked first"
    line = next(line for line in render_markdown(board).splitlines() if "`Mallory2026Lookup`" in line)
    assert "may have memorised it" in line and "signed by tester" in line and "false alarms" in line
    capsys.readouterr()

    seed = entry["result"]["fresh"]["seed"]
    assert main(["-q", "leaderboard", "rescore", "Mallory2026Lookup", "--checkpoint", str(lookup_model),
                 "--data", str(cpu_track_data), "--entries", str(entries)]) == 0
    assert f"on its fresh draw re-rendered from seed {seed}" in capsys.readouterr().out


def test_the_experiment_driver_verifies_a_run_as_one_resumable_step(cpu_track_data, tmp_path, monkeypatch,
                                                                   capsys):
    """`--add-entries --verify KEY`: each finished run is re-scored, drawn afresh, signed and entered
    as `<id>-verified` under both protocols; a second pass adds nothing."""
    from ident3d.baselines.experiment import load_experiment, main
    from ident3d.cli import main as cli
    from ident3d.leaderboard.entries import load_entries
    from ident3d.leaderboard.ranking import signer

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "pixels.toml").write_text('entry_prefix = "Test2026Driver"\ncheckpoint_every = 10\n'
                                          '[data.v2]\ntrack = "3dident-v2-64"\n'
                                          '[[runs]]\nname = "v2-pixels"\ndata = "v2"\npreset = "pixels"\n')
    out, entries = tmp_path / "out", tmp_path / "leaderboard" / "entries"
    (out / "data" / "v2").mkdir(parents=True)
    entries.mkdir(parents=True)
    (out / "data" / "v2" / "test").symlink_to(cpu_track_data / "test")  # the track's split, rendered once
    (out / "data" / ".v2.test.ready").write_text("")
    argv = [str(tmp_path / "pixels.toml"), str(out), "--add-entries", "--verify", "driver",
            "--entries", str(entries)]
    assert main(argv) == 1  # a key the keyring does not hold signs nothing, before any scoring
    assert "a maintainer adds it first" in capsys.readouterr().err
    assert cli(["-q", "leaderboard", "keyring", "add", "driver", "--holder", "the maintainers' driver",
                "--role", "machine", "--kept", "this test's config folder", "--entries", str(entries)]) == 0
    assert main(argv) == 0
    board = {e.key: e for e in load_entries(entries)}
    assert sorted(board) == ["cl-ica-2021/Test2026Driver_v2-pixels-verified",
                             "ident3d-eval-v1/Test2026Driver_v2-pixels-verified"]
    assert {signer(e) for e in board.values()} == {"driver"}
    assert not any(e.get("seed_group") for e in board.values())  # another status than the seed group's
    assert {e["result"]["fresh"]["n"] for e in board.values()} == {2000}
    stamps = {p.name: p.stat().st_mtime_ns for p in entries.rglob("*.json")}
    assert main(argv) == 0  # resumes: nothing left to do
    assert stamps == {p.name: p.stat().st_mtime_ns for p in entries.rglob("*.json")}
    assert load_experiment(tmp_path / "pixels.toml").runs[0].folder == "v2-pixels"



def test_a_paired_set_is_resampled_by_pair():
    """Rows 2k and 2k + 1 of a content/style set share their content: one draw of the distribution, not
    two. Resampled by pair, the gap's interval is as wide as that of the pairs alone; resampled row by
    row it would be narrower by about sqrt(2), and the flag would fire on chance more often."""
    from ident3d.protocols import REGISTRY

    rng = np.random.default_rng(0)
    z = np.repeat(rng.uniform(-1, 1, (400, 10)), 2, axis=0)
    h = z + 0.3 * np.repeat(rng.normal(size=(400, 10)), 2, axis=0)
    scoring = REGISTRY["ident3d-eval-v1"]
    public = scoring.score(z, h, paired=True)
    readout = fresh_module.Readout(z[public.fit], h[public.fit], public.assignment, scoring)
    held = (z[public.test], h[public.test])
    assert (held[0][0::2] == held[0][1::2]).all()  # the protocol keeps each pair's rows adjacent

    def width(paired: bool) -> float:
        gap = fresh_module.memorisation_gap(readout, held, held, seed=1, paired=paired)
        low, high = gap["linear_r2"]["ci95"]
        return high - low

    assert width(True) > 1.2 * width(False)
