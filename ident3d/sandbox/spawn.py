"""Start the sandbox process (no torch here, so a command can start it before importing torch).

The child imports torch and the rebuild code (seconds) and then waits for its settings; the
evaluator meanwhile imports torch itself and opens the data. ``prestart()`` starts one such process
early; ``take()`` hands it to the first ``SandboxedModel`` (or starts a fresh one).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
_waiting: list[tuple[subprocess.Popen, str]] = []


def _environment(temp: str) -> dict[str, str]:
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", "HOME": temp, "TMPDIR": temp, "MALLOC_ARENA_MAX": "2"}
    for name in ("CUDA_VISIBLE_DEVICES", "IDENT3D_SANDBOX_DEBUG"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def start() -> tuple[subprocess.Popen, str]:
    """A new child in a new empty folder, with a minimal environment and its own session."""
    temp = tempfile.mkdtemp(prefix="ident3d-sandbox-")
    launcher = (f"import sys; sys.path.insert(0, {str(PACKAGE_ROOT)!r}); "
                f"from ident3d.sandbox.child import run; run({os.getpid()})")
    debug = "IDENT3D_SANDBOX_DEBUG" in os.environ
    process = subprocess.Popen([sys.executable, "-I", "-c", launcher], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=None if debug else subprocess.DEVNULL,
                               cwd=temp, env=_environment(temp), close_fds=True, start_new_session=True)
    os.set_blocking(process.stdin.fileno(), False)
    return process, temp


def prestart() -> None:
    """Start a child now, to be taken by the next sandboxed model of this process."""
    if not _waiting:
        _waiting.append(start())


def take() -> tuple[subprocess.Popen, str]:
    return _waiting.pop() if _waiting else start()


@atexit.register
def _stop_unused() -> None:
    while _waiting:
        process, temp = _waiting.pop()
        process.kill()
        process.wait()
        shutil.rmtree(temp, ignore_errors=True)
