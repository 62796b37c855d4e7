"""Optional dependencies: a missing or clashing extra is named with the command that fixes it."""

import os
import subprocess
import sys

import pytest


def test_two_faiss_distributions_are_refused_with_the_fix(tmp_path):
    info = tmp_path / "faiss_gpu-1.15.1.dist-info"  # a second owner of the module 'faiss'
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: faiss-gpu\nVersion: 1.15.1\n")
    code = ("from ident3d.extras import require\n"
            "try:\n    require('faiss')\nexcept ImportError as e:\n    print(e)")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    assert "faiss-cpu and faiss-gpu are both installed" in out
    assert "pip uninstall -y faiss-cpu faiss-gpu" in out
    clean = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert clean == ""  # one distribution: faiss imports


@pytest.mark.slow
def test_load_pair_and_evaluate_work_without_blender_ray_or_exchange(tmp_path):
    """The README's core + FAISS install: the other extras' modules cannot be imported at all."""
    from conftest import write_fake_split

    write_fake_split(tmp_path / "data", "train", n=40, size=16)
    write_fake_split(tmp_path / "data", "test", n=40, size=16, seed=1)
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker/sitecustomize.py").write_text(
        "import sys\n"
        "BLOCKED = {'bpy', 'ray', 'zenodo_get', 'pyarrow', 'datasets', 'webdataset'}\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ImportError(f'{name} is not installed here')\n"
        "sys.meta_path.insert(0, Block())\n")
    code = ("import numpy as np, torch\n"
            "from torch.utils.data import DataLoader\n"
            "from ident3d import ThreeDIdent, ContrastivePairs, evaluate\n"
            "pairs = ContrastivePairs(ThreeDIdent('data', 'train'), seed=0)\n"
            "x, x_pos, z, z_pos = next(iter(DataLoader(pairs, batch_size=8)))\n"
            "np.save('h.npy', ThreeDIdent('data', 'test').latents)\n"
            "print(evaluate('h.npy', 'data', progress=False).metrics['linear_r2'])\n"
            "import bpy\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "blocker")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert float(out.stdout.split()[0]) > 0.99, out.stderr  # the true latents read out perfectly
    assert "bpy is not installed here" in out.stderr  # the blocker was active all along
