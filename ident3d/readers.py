"""Read ``.npy`` and JSON files that may be empty, truncated, pickled or crafted, with one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ident3d.errors import Ident3dError


def read_array(path: Path, error: type[Ident3dError], fix: str, mmap: bool = False) -> np.ndarray:
    """``np.load`` without pickles; any failure becomes ``error`` naming the file and ``fix``."""
    path = Path(path)
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise error(f"{path}: no such file. Fix: {fix}") from None
    except (OSError, ValueError, EOFError, SyntaxError) as exc:  # SyntaxError: a crafted header
        raise error(f"{path}: not a readable .npy array ({exc}). Fix: {fix}") from None
    if not isinstance(array, np.ndarray):
        raise error(f"{path}: holds {type(array).__name__}, expected one array. Fix: {fix}")
    return array


def read_json(path: Path, error: type[Ident3dError], fix: str) -> Any:
    """A JSON document (NaN and Infinity refused); any failure becomes ``error`` naming the file."""
    path = Path(path)
    try:
        return json.loads(path.read_bytes(), parse_constant=_no_constant)
    except FileNotFoundError:
        raise error(f"{path}: no such file. Fix: {fix}") from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError covers bad JSON and UTF-8
        raise error(f"{path}: not a readable JSON file ({exc}). Fix: {fix}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def is_real_numeric(array: np.ndarray) -> bool:
    """Integers or floats; not complex, bool, strings, objects or records."""
    return bool(np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating))
