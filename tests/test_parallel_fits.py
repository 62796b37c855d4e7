"""ident3d-eval-v1 runs its independent fits side by side (ident3d.parallel_fits): the same numbers,
bit for bit, as one after the other when every BLAS call has the same threads; the pool shares out the
process's BLAS threads and gives its tasks' errors back."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ident3d import parallel_fits
from ident3d.protocols import REGISTRY


def scored_both_ways(monkeypatch: pytest.MonkeyPatch, budget: int) -> tuple:
    """A public split and a fresh draw scored under ident3d-eval-v1 with ``budget`` BLAS threads
    claimed, while every BLAS call runs on one thread either way (a call on two threads may round
    apart from the same call on one: it does on AVX-512 machines)."""
    monkeypatch.setattr(parallel_fits, "thread_budget", lambda: budget)
    rng = np.random.default_rng(7)
    z = rng.uniform(-1, 1, (900, 10))
    h = np.tanh(z @ rng.normal(size=(10, 16))) + 0.02 * rng.normal(size=(900, 16))
    protocol = REGISTRY["ident3d-eval-v1"]
    with threadpool_limits(limits=1, user_api="blas"):
        public = protocol.score(z[:600], h[:600], ood={"latent_0 > 0.5": (z[600:700], h[600:700])})
        draw = protocol.score_draw(z[:300], h[:300], public, z[700:], h[700:])
    return public.values, public.companions, public.kernel, draw.values, draw.companions


def test_side_by_side_the_protocol_scores_the_same_bits_as_one_part_after_the_other(monkeypatch):
    assert repr(scored_both_ways(monkeypatch, 2)) == repr(scored_both_ways(monkeypatch, 1))


def test_the_tasks_run_on_the_pools_threads_and_in_the_callers_with_one_thread(monkeypatch):
    monkeypatch.setattr(parallel_fits, "thread_budget", lambda: 2)
    with parallel_fits.parallel_fits() as pool:
        names = set(pool.map(lambda _: threading.current_thread().name, range(8)))
    assert names and all(name.startswith("ident3d-fit") for name in names), names
    monkeypatch.setattr(parallel_fits, "thread_budget", lambda: 1)
    with parallel_fits.parallel_fits() as pool:
        assert isinstance(pool, parallel_fits.InOrder)
        caller = threading.current_thread().name
        assert set(pool.map(lambda _: threading.current_thread().name, range(3))) == {caller}


@pytest.mark.parametrize("budget", [1, 2])
def test_an_error_in_a_task_reaches_the_caller(monkeypatch, budget):
    monkeypatch.setattr(parallel_fits, "thread_budget", lambda: budget)

    def fails() -> None:
        raise np.linalg.LinAlgError("a task's error")

    with pytest.raises(np.linalg.LinAlgError, match="a task's error"), parallel_fits.parallel_fits() as pool:
        pool.submit(fails).result()


@pytest.mark.parametrize(("budget", "expected"), [(1, (1, 1)), (2, (2, 1)), (3, (3, 1)), (4, (4, 1)),
                                                  (8, (4, 2)), (9, (4, 2)), (64, (4, 16))])
def test_the_threads_are_shared_out_among_at_most_four_workers(budget, expected):
    assert parallel_fits.share(budget) == expected
