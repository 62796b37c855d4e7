"""Optional dependencies: a missing or clashing extra is named with the command that fixes it."""

import os
import subprocess
import sys


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
