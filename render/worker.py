"""What a long-lived render process does: build the scene once, then render images atomically.

The same functions serve the local pool (multiprocessing) and Ray workers: the scene lives in a
module-level slot for the life of the process.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ident3d.errors import Ident3dError, RenderError
from ident3d.render.settings import RenderSettings

_scene = None  # the BlenderScene of this process, built on first use
_startup_error: str | None = None  # why the scene could not be built, reported by render_one


def init_worker(settings: RenderSettings, tempdir: str | None = None, threads: int | None = None) -> None:
    """Build the scene once (pool initializer); later calls with other settings rebuild it.

    ``tempdir``: where Blender makes its session temp folder (it reads TMPDIR when bpy is imported).
    ``threads``: Cycles' threads in this worker (None: one per CPU).
    A failure is kept and raised by the first task instead: a pool restarts workers whose
    initializer raises, forever, while a failed task ends the job with the worker's message.
    """
    global _scene, _startup_error
    if _scene is None or _scene.settings != settings:
        if tempdir is not None:
            os.environ["TMPDIR"] = tempdir
        try:
            from ident3d.render.blender_scene import BlenderScene

            _silence_blender()
            with _blender_sized_for(threads):  # bpy is imported as the scene is built
                _scene = BlenderScene(settings, threads)
            _startup_error = None
        except Exception as error:  # bpy missing, no GPU, a broken Blender: all end the job
            _startup_error = f"{type(error).__name__}: {error}" if not isinstance(
                error, Ident3dError) else str(error)
    _die_with_parent()  # after bpy's import, which may install its own handlers


@contextmanager
def _blender_sized_for(threads: int | None) -> Iterator[None]:
    """Import bpy on ``threads`` of this process's CPUs, then give it all of them back.

    Blender sizes its task scheduler (TBB) from the CPUs a process may use when bpy is imported, and
    Cycles' ``threads`` does not shrink it: each worker of a pool kept a scheduler thread that spins
    (``sched_yield``) after every image, about a fifth of a core at 64 px, which the other workers'
    render threads then lacked. Sized to the worker's share, the scheduler has no thread to spare. The
    pixels are the same: Cycles renders on ``threads`` threads either way."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    if threads is None or threads >= len(allowed) or "bpy" in sys.modules:
        yield
        return
    os.sched_setaffinity(0, sorted(allowed)[:threads])
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def _die_with_parent() -> None:
    """Linux: end this worker when the process that started it dies, even by SIGKILL (no orphans
    rendering for nobody); elsewhere nothing. Ctrl-C is ignored: the parent stops the workers."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


PR_SET_PDEATHSIG = 1


def probe_device(device: str, tempdir: str) -> str | None:
    """Run in a throw-away process before any worker starts: None when ``device`` can render."""
    os.environ["TMPDIR"] = tempdir
    try:
        import bpy

        from ident3d.render.blender_scene import NO_GPU, gpu_backend
    except ImportError as error:
        return str(error)
    if device == "gpu" and gpu_backend(bpy) is None:
        return NO_GPU
    return None


def _silence_blender() -> None:
    """Blender prints a line per saved image on the C level; send the worker's stdout to null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


# Chunks Blender writes besides the pixels: stamp metadata (date, render time, Cycles timings) and
# physical size. Dropping them makes a PNG's bytes a function of its pixels alone, so the sha256 in a
# manifest is the same on every re-render of the same setting.
VOLATILE_CHUNKS = {b"tEXt", b"zTXt", b"iTXt", b"tIME", b"eXIf", b"oFFs", b"pHYs"}


def drop_volatile_chunks(path: Path) -> None:
    """Rewrite the PNG at ``path`` without its metadata chunks; pixel data is copied unchanged."""
    data = path.read_bytes()
    out, i = [data[:8]], 8
    while i < len(data):
        length = int.from_bytes(data[i:i + 4], "big")
        end = i + 12 + length
        if data[i + 4:i + 8] not in VOLATILE_CHUNKS:
            out.append(data[i:end])
        i = end
    path.write_bytes(b"".join(out))


def render_one(task: tuple[int, str, dict]) -> int:
    """Render image ``index`` to ``path`` atomically; returns the index."""
    index, path, params = task
    if _startup_error is not None or _scene is None:
        raise RenderError(f"a render worker could not start ({_startup_error}); the job stopped and "
                          "finished images are kept.")
    final = Path(path)
    tmp = final.with_name(f".{final.stem}.{os.getpid()}.tmp.png")
    try:
        _scene.render(params, tmp)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise RuntimeError(f"Blender wrote no image to {tmp}")
        drop_volatile_chunks(tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return index


def render_tasks(settings: RenderSettings, tasks: list[tuple[int, str, dict]],
                 threads: int | None = None) -> list[int]:
    """Render a contiguous chunk in this process (the unit of work of the Ray engine, which gives
    each task one CPU: ``threads=1``)."""
    init_worker(settings, threads=threads)
    return [render_one(t) for t in tasks]
