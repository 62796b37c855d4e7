"""Atomic file writes: a temporary file in the same folder, then ``os.replace``.

A job killed at any moment leaves either the old file or the new one, never a half-written file
that looks finished.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: Path, suffix: str = "", exclusive: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it into place only if the block succeeds. With
    ``exclusive`` the complete file is linked into place only where no file is (FileExistsError
    otherwise): of two writers racing for one path, one writes and the other writes nothing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the final file the usual mode
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if exclusive:
            os.link(tmp_path, path)
        else:
            os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def replace_folder(new: Path, old: Path) -> None:
    """Put the complete folder ``new`` where ``old`` is: two renames in one file system, ``old`` set
    aside first (as ``.<name>.old``, removed last), so nothing is deleted before its replacement
    is in place."""
    new, old = Path(new), Path(old)
    aside = old.with_name(f".{old.name}.old")
    shutil.rmtree(aside, ignore_errors=True)
    if old.exists():
        os.rename(old, aside)
    os.rename(new, old)
    shutil.rmtree(aside, ignore_errors=True)


def write_bytes(path: Path, data: bytes, exclusive: bool = False) -> None:
    with atomic_path(path, exclusive=exclusive) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def write_json(path: Path, obj: Any, exclusive: bool = False) -> None:
    write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode(), exclusive)


def save_npy(path: Path, array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    write_bytes(path, buffer.getvalue())


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    """The hex digest of a file's bytes (``hashlib.file_digest``: read in chunks, never whole)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algorithm).hexdigest()


def sha256_file(path: Path) -> str:
    return file_digest(path, "sha256")


def sha256_array(array: np.ndarray) -> str:
    """Checksum of an array's dtype, shape and bytes (independent of the .npy header layout)."""
    a = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()
