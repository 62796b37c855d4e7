"""The lean CPU-only install: a new venv with torch's CPU build and ``ident3d[faiss]`` evaluates a
model with no bpy, no torchvision and no CUDA library, and the README shows what was measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import lean_install


def local_cpu_torch() -> Path | None:
    """A CPU wheel of torch in a folder pip is configured to find links in (PyTorch's CPU index is
    not reachable from every machine this suite runs on)."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                            text=True).stdout
    folders = {line.split("=", 1)[1].strip("'\" ") for line in listed.splitlines()
               if line.split("=", 1)[0].endswith("find-links")}
    wheels = [w for folder in folders for w in Path(folder).glob("torch-*+cpu-cp311-*.whl")]
    return max(wheels, default=None)


@pytest.mark.slow
def test_the_lean_venv_evaluates_without_bpy_torchvision_or_cuda(tmp_path):
    wheel = local_cpu_torch()
    if wheel is None or sys.version_info[:2] != (3, 11):
        pytest.skip("no CPU build of torch for this Python in pip's find-links folders")
    figures = lean_install.measure(tmp_path / "venv", str(wheel))
    assert figures["torch"].endswith("+cpu") and not figures["cuda_available"]
    assert figures["unwanted"] == [] and figures["cuda_libraries_mapped"] == []
    assert {"ident3d", "faiss-cpu", "torch", "pyseccomp"} <= set(figures["distributions"])
    assert {"linear_r2", "mcc_pearson"} <= set(figures["evaluated"])


def test_an_existing_venv_folder_is_refused_untouched(tmp_path):
    (tmp_path / "mine.txt").write_text("someone's data")
    with pytest.raises(SystemExit, match="already exists"):
        lean_install.measure(tmp_path, "torch")
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_the_committed_measurement_found_nothing_unwanted():
    """The README's line is made from it (the reports registry's ``lean-install`` block)."""
    figures = json.loads(lean_install.FIGURES.read_text())
    assert figures["unwanted"] == [] and figures["cuda_libraries_mapped"] == []
    assert figures["torch"].endswith("+cpu") and "linear_r2" in figures["evaluated"]
