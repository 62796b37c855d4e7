"""Argument types that refuse nonsense at the boundary (a usage error, exit 2) and output checks."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

from ident3d.errors import Ident3dError


def _number(kind: type, text: str, acceptable: Callable[[float], bool], wanted: str) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
    if not (math.isfinite(value) and acceptable(value)):
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(int, text, lambda v: v >= 1, "a positive integer")


def nonnegative_int(text: str) -> int:
    return _number(int, text, lambda v: v >= 0, "an integer >= 0")


def positive_float(text: str) -> float:
    return _number(float, text, lambda v: v > 0, "a positive finite number")


class OutputError(Ident3dError):
    """An output path that cannot be written."""


def check_output_file(path: Path, flag: str) -> Path:
    """Refuse an output file path that is a folder or sits in a folder that cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{flag} {path}: is a folder, expected a file name. "
                          f"Fix: pass a file path such as {path / 'result.json'}")
    _check_writable(path.parent, path, flag)
    return path


def check_output_folder(path: Path, flag: str) -> Path:
    """Refuse an output folder path that is a file or cannot be written."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{flag} {path}: is a file, expected a folder. "
                          "Fix: pass a folder path (it is created if missing).")
    _check_writable(path, path, flag)
    return path


def _check_writable(folder: Path, path: Path, flag: str) -> None:
    """The nearest existing ancestor of ``folder`` (itself included) must be a writable folder."""
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: {folder} is not a writable folder. "
                          "Fix: choose a location you can write to.")
