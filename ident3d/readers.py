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
        return parse_json(path.read_bytes())
    except FileNotFoundError:
        raise error(f"{path}: no such file. Fix: {fix}") from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError covers bad JSON and UTF-8
        raise error(f"{path}: not a readable JSON file ({exc}). Fix: {fix}") from None


def parse_json(raw: bytes | str) -> Any:
    """Strict JSON: NaN and Infinity are refused (ValueError), like bad syntax and bad UTF-8."""
    return json.loads(raw, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


SAFETENSORS_MAX_HEADER = 100 << 20


def safetensors_header(head: bytes) -> dict[str, Any]:
    """The JSON header of a safetensors file from its first bytes (at least 8 + the header length);
    ValueError saying what is wrong. Nothing else of the file is read."""
    if len(head) < 8:
        raise ValueError("shorter than its 8-byte header length")
    size = int.from_bytes(head[:8], "little")
    if size > min(len(head) - 8, SAFETENSORS_MAX_HEADER):
        raise ValueError("the header length points beyond the file")
    try:
        header = parse_json(head[8:8 + size])
    except (ValueError, RecursionError):
        raise ValueError("the header is not JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("__metadata__", {}), dict):
        raise ValueError("the header is not a JSON object with a metadata object")
    return header


def is_real_numeric(array: np.ndarray) -> bool:
    """Integers or floats; not complex, bool, strings, objects or records."""
    return bool(np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating))
