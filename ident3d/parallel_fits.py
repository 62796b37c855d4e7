"""A protocol's independent fits, run side by side on the cores this process has.

The parts of ``ident3d-eval-v1`` do not wait on each other's results: the kernel choice's folds and
gammas, the fitted read-outs, read-out extrapolation's fits and DCI. Each spends its time in numpy
calls and Cholesky solves that let go of the GIL (``ident3d.lapack``: scipy's own LAPACK wrappers hold
it, and threads calling them take turns), or (DCI's elastic net) in Python beside them, so threads of
one process keep every core busy. Run one after the other, the factorisations used both cores of a
2-core machine but numpy's ``exp`` and DCI's loop only one.

``parallel_fits()`` shares out the threads the process's BLAS libraries may use (their current limit,
so ``OMP_NUM_THREADS=1`` or an enclosing ``threadpoolctl`` limit is respected): up to ``MAX_WORKERS``
workers, each BLAS call on the remaining share. With one thread there is nothing to share and the tasks
run in the caller's thread, in order.

The numbers do not depend on the schedule: every task is a pure function of its inputs, and callers
combine the results in the order they listed the tasks. A BLAS call on one thread may round apart from
the same call on two, far inside the golden values' tolerance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

MAX_WORKERS = 4  # a protocol's stages hold 12 to 16 tasks of uneven length: more workers would wait


class InOrder(Executor):
    """An executor that runs each task as it is submitted, in the caller's thread: the serial path, and
    what a function given no pool uses."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # raised again by future.result(), where a pool's would be
            future.set_exception(error)
        return future


def thread_budget() -> int:
    """The threads this process's BLAS libraries may use now (the most any of them allows)."""
    import scipy.linalg  # noqa: F401 (scipy's own BLAS, which the factorisations call, must be loaded to be seen)
    from threadpoolctl import threadpool_info

    return max((pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"), default=1)


def share(budget: int) -> tuple[int, int]:
    """(workers, BLAS threads per worker) for a budget of threads."""
    workers = max(1, min(budget, MAX_WORKERS))
    return workers, max(1, budget // workers)


@contextmanager
def parallel_fits() -> Iterator[Executor]:
    """An executor for a protocol's independent fits (the module docstring): a thread pool sharing the
    BLAS threads out while the block runs, or ``InOrder`` when there is one thread."""
    workers, threads = share(thread_budget())
    if workers == 1:
        yield InOrder()
        return
    from threadpoolctl import threadpool_limits

    pool = ThreadPoolExecutor(workers, thread_name_prefix="ident3d-fit")
    with threadpool_limits(limits=threads, user_api="blas"):
        try:
            yield pool
        finally:  # inside the limits: no task outlives them; on an error, none still queued starts
            pool.shutdown(wait=True, cancel_futures=True)
