"""A Cholesky solve through scipy's LAPACK that lets other threads run while it factorises.

scipy's ``cho_factor`` and ``cho_solve`` hold the GIL for the whole LAPACK call (their f2py wrappers
do not release it), so two threads factorising side by side take turns: on 2 cores 1.05x as fast as
one after the other (``python -m benchmarks.scoring``'s last lines). The same routines are exported
as C function pointers by ``scipy.linalg.cython_lapack`` (its documented Cython API); called through
``ctypes``, which releases the GIL around a foreign call, they run in parallel, and since they are
the very routines scipy's wrappers call, on the same matrices laid out as those wrappers lay them
out (Fortran order), they give the same bits.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from numpy.linalg import LinAlgError

_INT = ctypes.POINTER(ctypes.c_int)
_SIGNATURES = {  # (uplo, n, a, lda, info) and (uplo, n, nrhs, a, lda, b, ldb, info)
    "dpotrf": (ctypes.c_char_p, _INT, ctypes.c_void_p, _INT, _INT),
    "dpotrs": (ctypes.c_char_p, _INT, _INT, ctypes.c_void_p, _INT, ctypes.c_void_p, _INT, _INT),
}


@functools.cache
def _routine(name: str) -> ctypes._CFuncPtr:
    from scipy.linalg import cython_lapack

    capsule = cython_lapack.__pyx_capi__[name]
    # prototypes of our own: setting argtypes on ctypes.pythonapi's shared functions would change them
    # for every other user in the process
    capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
        ("PyCapsule_GetName", ctypes.pythonapi))
    pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    return ctypes.CFUNCTYPE(None, *_SIGNATURES[name])(pointer(capsule, capsule_name(capsule)))


def cholesky_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``cho_solve(cho_factor(a), b)`` for a symmetric positive definite ``a`` (its upper triangle is
    read), bit for bit, without holding the GIL while LAPACK runs. ``a`` must be a Fortran-ordered
    float64 array the caller owns: it is overwritten by its factor. Raises ``LinAlgError`` when ``a``
    is not positive definite, as ``cho_factor`` does."""
    if a.dtype != np.float64 or not a.flags.f_contiguous or not a.flags.writeable:
        raise ValueError("cholesky_solve factorises in place: pass a writeable Fortran-ordered float64 array")
    if a.ndim != 2 or a.shape[0] != a.shape[1] or b.shape[0] != a.shape[0] or b.ndim > 2:
        raise ValueError(f"cholesky_solve: a {a.shape} must be square and b {b.shape} have as many rows")
    n = ctypes.c_int(a.shape[0])
    info = ctypes.c_int(0)
    _routine("dpotrf")(b"U", ctypes.byref(n), a.ctypes.data, ctypes.byref(n), ctypes.byref(info))
    if info.value != 0:
        raise LinAlgError(f"{info.value}-th leading minor not positive definite" if info.value > 0
                          else f"dpotrf: argument {-info.value} is invalid")
    x = np.array(b.reshape(len(b), -1), dtype=np.float64, order="F", copy=True)
    columns = ctypes.c_int(x.shape[1])
    _routine("dpotrs")(b"U", ctypes.byref(n), ctypes.byref(columns), a.ctypes.data, ctypes.byref(n),
                       x.ctypes.data, ctypes.byref(n), ctypes.byref(info))
    return x.reshape(b.shape) if b.ndim == 1 else x
