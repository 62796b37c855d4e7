"""ident3d.lapack: scipy's Cholesky routines called without the GIL give cho_solve's bits, fail as
cho_factor fails, and refuse arrays they would read past."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve
from threadpoolctl import threadpool_limits

from ident3d import lapack, metrics


def kernel(n: int = 600, gamma: float = 0.05) -> np.ndarray:
    """An RBF kernel matrix as the read-outs build it (its two triangles may differ in the last bit)."""
    h = np.random.default_rng(3).normal(size=(n, 20))
    return metrics._rbf_of(metrics._squared_distances(h, h), gamma)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("alpha", [1.0, 1e-3])
@pytest.mark.parametrize("targets", [(600,), (600, 7)])
def test_the_solve_gives_cho_solve_bits(threads, alpha, targets):
    k = kernel()
    b = np.random.default_rng(4).normal(size=targets)
    with threadpool_limits(limits=threads, user_api="blas"):
        expected = cho_solve(cho_factor(k + alpha * np.eye(len(k)), check_finite=False), b)
        got = lapack.cholesky_solve(np.asfortranarray(k + alpha * np.eye(len(k))), b)
    assert got.shape == expected.shape and got.flags.f_contiguous == expected.flags.f_contiguous
    assert np.array_equal(got, expected)


def test_a_matrix_that_is_not_positive_definite_raises_as_cho_factor_does():
    with pytest.raises(np.linalg.LinAlgError, match="2-th leading minor"):
        lapack.cholesky_solve(np.asfortranarray(np.diag([1.0, -1.0, 1.0])), np.ones(3))
    # and the ridge read-out falls back to least squares, as it did on scipy's error
    singular = np.ones((4, 4))
    assert np.allclose(metrics._ridge_solve(singular, np.ones(4), 0.0),
                       np.linalg.lstsq(singular, np.ones(4), rcond=None)[0])


@pytest.mark.parametrize(("a", "b"), [
    (np.eye(3), np.ones(3)),                                     # C order: LAPACK would read its transpose
    (np.asfortranarray(np.eye(3, dtype=np.float32)), np.ones(3)),
    (np.asfortranarray(np.eye(3)), np.ones(4)),                  # b longer than a: LAPACK reads past a
    (np.asfortranarray(np.eye(3)), np.ones(2)),                  # shorter: it writes past b's copy
    (np.asfortranarray(np.ones((3, 2))), np.ones(3)),
])
def test_arrays_it_would_misread_are_refused_before_lapack_runs(a, b):
    with pytest.raises(ValueError, match="cholesky_solve"):
        lapack.cholesky_solve(a, b)


def test_the_routines_are_called_without_the_gil():
    """ctypes releases the GIL around a call through a CFUNCTYPE pointer, not a PYFUNCTYPE one (the
    speed it gives threads side by side: `python -m benchmarks.scoring`, last lines)."""
    for name in ("dpotrf", "dpotrs"):
        assert not type(lapack._routine(name))._flags_ & ctypes._FUNCFLAG_PYTHONAPI, name
