import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.blender


def test_demo_runs_end_to_end_and_resumes(tmp_path):
    cmd = [sys.executable, "-m", "ident3d.cli", "-q", "demo", "--out", str(tmp_path),
           "--n-train", "120", "--n-test", "80"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    oracle = json.loads((tmp_path / "results/true-latents.json").read_text())
    assert oracle["metrics"]["mcc_pearson"] > 0.999
    pixels = json.loads((tmp_path / "results/pixel-readout.json").read_text())
    assert pixels["model"]["kind"] == "exported-program"
    assert pixels["metrics"]["mcc_pearson"] < oracle["metrics"]["mcc_pearson"]
    manifest = tmp_path / "data/train/manifest.json"
    stamp = manifest.stat().st_mtime_ns
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert manifest.stat().st_mtime_ns == stamp  # finished renders and packs are not redone
    assert "outputs:" in second.stdout
