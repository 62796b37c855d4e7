"""Engines that run render tasks: a local pool of long-lived processes, or Ray."""

from __future__ import annotations

import math
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from ident3d.errors import RenderError
from ident3d.extras import require
from ident3d.render.settings import RenderSettings
from ident3d.render.worker import init_worker, probe_device, render_tasks

Task = tuple[int, str, dict]
ENGINES = ("local", "ray")


def run(engine: str, settings: RenderSettings, tasks: list[Task], workers: int,
        address: str | None, on_done: Callable[[int], None], stop: threading.Event | None = None) -> None:
    """Render ``tasks`` with the named engine (``stop``: see ``run_local``; local processes only)."""
    if engine == "local":
        run_local(settings, tasks, workers, on_done, stop)
    elif stop is not None:
        raise RenderError(f"engine {engine!r} cannot be stopped from another thread; expected 'local'")
    elif engine == "ray":
        run_ray(settings, tasks, workers, address, on_done)
    else:
        raise RenderError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


def run_local(settings: RenderSettings, tasks: list[Task], workers: int,
              on_done: Callable[[int], None], stop: threading.Event | None = None) -> None:
    """Spawned worker processes each build the scene once and render contiguous chunks.

    A worker that dies (killed, out of memory) breaks the pool and ends the job with one error
    instead of leaving its chunk unfinished forever; finished images are kept for the re-run.
    Ctrl-C and SIGTERM stop the job at once: the workers never see SIGINT (they start with it
    ignored), are terminated by this process, and die with it if it is killed outright; the
    interrupt then reaches the caller as KeyboardInterrupt. ``stop``, set by another thread, stops
    the job the same way within ``STOP_POLL_S`` and raises ``RenderStopped``. Blender's per-process
    temp folders go to one scratch folder that is removed here, even after a failure.
    """
    if not tasks:
        return
    workers = max(1, min(workers, len(tasks)))
    size = max(1, min(8, len(tasks) // (4 * workers)))
    ctx = multiprocessing.get_context("spawn")  # bpy is not fork-safe
    scratch = tempfile.mkdtemp(prefix="ident3d-render-")
    before = set(multiprocessing.active_children())
    pool = None
    try:
        with _sigterm_as_interrupt():
            check_device(settings, scratch)
            pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=init_worker,
                                       initargs=(settings, scratch, threads_per_worker(workers)))
            with _sigint_ignored(), caller_main_hidden():  # the workers start during the submits
                chunks = [pool.submit(render_tasks, settings, tasks[i:i + size])
                          for i in range(0, len(tasks), size)]
            pending = set(chunks)
            while pending:
                done, pending = wait(pending, None if stop is None else STOP_POLL_S, FIRST_COMPLETED)
                for chunk in done:
                    on_done(len(chunk.result()))
                if stop is not None and stop.is_set() and pending:
                    raise RenderStopped("the render was stopped before it finished")
            pool.shutdown()
    except BaseException as error:
        if pool is not None:
            _stop(pool, set(multiprocessing.active_children()) - before)
        if isinstance(error, (RenderError, KeyboardInterrupt)):
            raise
        if isinstance(error, BrokenProcessPool):
            raise RenderError("a render worker died (killed, or out of memory); finished images are "
                              "kept. Fix: re-run the same command to resume.") from None
        if isinstance(error, Exception):  # a worker's exception, re-raised by its future
            raise RenderError(f"a render worker failed ({type(error).__name__}: {error}); finished "
                              "images are kept. Fix: re-run the same command to resume.") from error
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def threads_per_worker(workers: int) -> int:
    """Cycles' threads for each of ``workers`` local processes: the CPUs this process may use,
    shared out (one worker takes them all; as many workers as CPUs take one each)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // workers)


def _stop(pool: ProcessPoolExecutor, workers: set[multiprocessing.process.BaseProcess]) -> None:
    """Cancel what has not started and end the workers now (an image half-rendered is left as a
    temporary file, which the re-run removes)."""
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()
    for process in workers:
        process.join(STOP_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()


STOP_GRACE_S = 5.0
STOP_POLL_S = 0.1  # how often a job with a ``stop`` event looks at it


class RenderStopped(RenderError):
    """A local job ended early because its ``stop`` event was set."""


@contextmanager
def caller_main_hidden() -> Iterator[None]:
    """Start spawned workers without the caller's ``__main__``: a spawned process re-imports the
    parent's main module (by path, or by name under ``python -m``) to unpickle what it defined,
    which re-runs a script without an ``if __name__ == "__main__":`` guard once per worker. The
    workers need nothing from it (their functions live in this package), so while they start the
    main module shows neither its file nor its spec, and they import nothing of the caller's."""
    main = sys.modules["__main__"]
    saved = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Workers started in the block never see SIGINT: it is ignored while they start from the main
    thread, and blocked in another thread (a signal's disposition can only be changed from the main
    thread; a blocked mask is inherited by the spawned processes as an ignored signal is)."""
    if threading.current_thread() is not threading.main_thread():
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler's preemption) stops the job like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def check_device(settings: RenderSettings, scratch: str) -> None:
    """A GPU that is not there is found in one short-lived process, before any worker starts."""
    if settings.device == "cpu":
        return
    with caller_main_hidden(), multiprocessing.get_context("spawn").Pool(1) as pool:
        problem = pool.apply(probe_device, (settings.device, scratch))
    if problem:
        raise RenderError(problem)


def run_ray(settings: RenderSettings, tasks: list[Task], workers: int, address: str | None,
            on_done: Callable[[int], None]) -> None:
    """Ray tasks over contiguous chunks; a chunk whose worker dies or raises is retried 3 times.

    Ray reuses worker processes, so each builds the Blender scene once (``ident3d.render.worker``).
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
        pending = [remote.remote(settings, tasks[i:i + size], 1) for i in range(0, len(tasks), size)]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                on_done(len(ray.get(ref)))
    except ray.exceptions.RayError as error:
        raise RenderError(f"the Ray render failed after retries: {error}") from error
    finally:
        if started_here:
            ray.shutdown()
