"""The prepared GPU check runs its whole table at toy sizes on the CPU, so it cannot rot before the
first GPU session (benchmarks/gpu_check.py)."""

import json
import subprocess
import sys

import pytest


@pytest.mark.blender
@pytest.mark.slow
def test_the_gpu_check_prints_its_whole_table_on_the_cpu(tmp_path):
    out = tmp_path / "gpu-check.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check", "--device", "cpu", "--tiny",
                           "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout)  # the table, in the suite's output
    for path in ("| render |", "| training |", "| synthetic |", "| evaluator |"):
        assert path in done.stdout
    record = json.loads(out.read_text())
    assert record["render"]["mae_vs_cpu_worst"] == 0  # both renders on the CPU: the same pixels
    assert record["training"]["steps_per_s"] > 0 and record["evaluator"]["images_per_s"] > 0
    assert len(record["synthetic"]["curve"]) == 2 and record["synthetic"]["steps"] >= 2
    again = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check", "--device", "cpu", "--tiny",
                            "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert again.returncode == 1 and "exists" in again.stderr  # nothing is overwritten
