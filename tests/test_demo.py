import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.slow]


def test_demo_runs_end_to_end_and_resumes(tmp_path):
    cmd = [sys.executable, "-m", "ident3d.cli", "-q", "demo", "--out", str(tmp_path),
           "--n-train", "150", "--n-test", "100", "--iterations", "20"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr
    assert [line[:6] for line in first.stdout.splitlines() if line.startswith("== ")] == [
        f"== {i}/7" for i in range(1, 8)]
    # a custom test split has no track distribution to draw from (the fresh-draw flow on the track's
    # split is tests/test_fresh.py's, with the same lookup encoder the demo builds)
    assert "skipped: --n-test makes a custom test split" in first.stdout
    oracle = json.loads((tmp_path / "results/true-latents.json").read_text())
    assert oracle["metrics"]["mcc_pearson"] > 0.999
    pixels = json.loads((tmp_path / "results/pixel-readout.json").read_text())
    assert pixels["model"]["kind"] == "exported-program"
    assert pixels["metrics"]["mcc_pearson"] < oracle["metrics"]["mcc_pearson"]
    smoke = json.loads((tmp_path / "runs/smoke/result.json").read_text())
    assert smoke["protocol"] == "ident3d-eval-v1" and smoke["model"]["file"] == "encoder.pt2"
    board = (tmp_path / "leaderboard/LEADERBOARD.md").read_text()
    assert "Demo2026Smoke" in board and "Zimmermann2021Contrastive_normal-box" in board
    entry = json.loads((tmp_path / "leaderboard/entries/ident3d-eval-v1/Demo2026Smoke.json").read_text())
    assert entry["status"] == "public-split" and entry["checkpoint_sha256"] == smoke["model"]["sha256"]
    assert (tmp_path / "leaderboard/site/index.html").stat().st_size > 5000
    for variant in ("v2", "legacy"):
        assert (tmp_path / f"figures/traversal-{variant}.png").stat().st_size > 1000

    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "data/train/manifest.json",
                                                tmp_path / "runs/smoke/checkpoint.safetensors",
                                                tmp_path / "runs/smoke/result.json")}
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # finished steps are not redone
    assert "outputs:" in second.stdout and "web page" in second.stdout
