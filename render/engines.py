"""Engines that run render tasks: a local pool of long-lived processes, or Ray."""

from __future__ import annotations

import math
import multiprocessing
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from ident3d.errors import RenderError
from ident3d.extras import require
from render.settings import RenderSettings
from render.worker import init_worker, probe_device, render_tasks

Task = tuple[int, str, dict]
ENGINES = ("local", "ray")


def run(engine: str, settings: RenderSettings, tasks: list[Task], workers: int,
        address: str | None, on_done: Callable[[int], None]) -> None:
    """Render ``tasks`` with the named engine."""
    if engine == "local":
        run_local(settings, tasks, workers, on_done)
    elif engine == "ray":
        run_ray(settings, tasks, workers, address, on_done)
    else:
        raise RenderError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


def run_local(settings: RenderSettings, tasks: list[Task], workers: int,
              on_done: Callable[[int], None]) -> None:
    """Spawned worker processes each build the scene once and render contiguous chunks.

    A worker that dies (killed, out of memory) breaks the pool and ends the job with one error
    instead of leaving its chunk unfinished forever; finished images are kept for the re-run.
    Blender's per-process temp folders go to one scratch folder that is removed here, even after a
    failure.
    """
    if not tasks:
        return
    workers = max(1, min(workers, len(tasks)))
    size = max(1, min(8, len(tasks) // (4 * workers)))
    ctx = multiprocessing.get_context("spawn")  # bpy is not fork-safe
    scratch = tempfile.mkdtemp(prefix="ident3d-render-")
    try:
        check_device(settings, scratch)
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=init_worker,
                                 initargs=(settings, scratch)) as pool:
            chunks = [pool.submit(render_tasks, settings, tasks[i:i + size])
                      for i in range(0, len(tasks), size)]
            for done in as_completed(chunks):
                on_done(len(done.result()))
    except RenderError:
        raise
    except BrokenProcessPool:
        raise RenderError("a render worker died (killed, or out of memory); finished images are kept. "
                          "Fix: re-run the same command to resume.") from None
    except Exception as error:  # a worker's exception arrives here, re-raised by the future
        raise RenderError(f"a render worker failed ({type(error).__name__}: {error}); finished "
                          "images are kept. Fix: re-run the same command to resume.") from error
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_device(settings: RenderSettings, scratch: str) -> None:
    """A GPU that is not there is found in one short-lived process, before any worker starts."""
    if settings.device == "cpu":
        return
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        problem = pool.apply(probe_device, (settings.device, scratch))
    if problem:
        raise RenderError(problem)


def run_ray(settings: RenderSettings, tasks: list[Task], workers: int, address: str | None,
            on_done: Callable[[int], None]) -> None:
    """Ray tasks over contiguous chunks; a chunk whose worker dies or raises is retried 3 times.

    Ray reuses worker processes, so each builds the Blender scene once (``render.worker``).
    """
    if not tasks:
        return
    ray = require("ray")
    if address is None:  # a local instance renders here: the device must be here too
        scratch = tempfile.mkdtemp(prefix="ident3d-render-")
        try:
            check_device(settings, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    started_here = not ray.is_initialized()
    if started_here:
        local = address is None
        ray.init(address=address, num_cpus=workers if local else None, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1, max_retries=3, retry_exceptions=True)(render_tasks)
        size = max(1, math.ceil(len(tasks) / (4 * workers)))
        pending = [remote.remote(settings, tasks[i:i + size]) for i in range(0, len(tasks), size)]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                on_done(len(ray.get(ref)))
    except ray.exceptions.RayError as error:
        raise RenderError(f"the Ray render failed after retries: {error}") from error
    finally:
        if started_here:
            ray.shutdown()
