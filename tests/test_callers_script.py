"""Whatever the package starts in the background never re-runs the caller's script: spawned render
workers import the parent's ``__main__`` unless it is hidden while they start (render/engines.py,
``caller_main_hidden``). A plain script without an ``if __name__ == "__main__":`` guard renders with
two workers and must print its line once, not once per worker."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.blender

SCRIPT = """
import sys
from pathlib import Path
from ident3d.render.job import plan_job, render_split
from ident3d.render.settings import resolve_settings
print("the script ran", flush=True)
job = plan_job(Path(sys.argv[1]), "test", n=4, seed=0, variant="v2", settings=resolve_settings("preview"))
render_split(job, workers=2, progress=False)
"""


def test_a_script_without_a_main_guard_runs_once(tmp_path):
    script = tmp_path / "plain_script.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("the script ran") == 1, done.stdout
    assert len(list((tmp_path / "out/test").rglob("*.png"))) == 4
