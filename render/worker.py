"""What a long-lived render process does: build the scene once, then render images atomically.

The same functions serve the local pool (multiprocessing) and Ray workers: the scene lives in a
module-level slot for the life of the process.
"""

from __future__ import annotations

import os
from pathlib import Path

from render.settings import RenderSettings

_scene = None  # the BlenderScene of this process, built on first use


def init_worker(settings: RenderSettings, tempdir: str | None = None) -> None:
    """Build the scene once (pool initializer); later calls with other settings rebuild it.

    ``tempdir``: where Blender makes its session temp folder (it reads TMPDIR when bpy is imported).
    """
    global _scene
    if _scene is None or _scene.settings != settings:
        if tempdir is not None:
            os.environ["TMPDIR"] = tempdir
        from render.blender_scene import BlenderScene

        _silence_blender()
        _scene = BlenderScene(settings)


def _silence_blender() -> None:
    """Blender prints a line per saved image on the C level; send the worker's stdout to null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def render_one(task: tuple[int, str, dict]) -> int:
    """Render image ``index`` to ``path`` atomically; returns the index."""
    index, path, params = task
    final = Path(path)
    tmp = final.with_name(f".{final.stem}.{os.getpid()}.tmp.png")
    try:
        _scene.render(params, tmp)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise RuntimeError(f"Blender wrote no image to {tmp}")
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return index


def render_tasks(settings: RenderSettings, tasks: list[tuple[int, str, dict]]) -> list[int]:
    """Render a contiguous chunk in this process (the unit of work of the Ray engine)."""
    init_worker(settings)
    return [render_one(t) for t in tasks]
