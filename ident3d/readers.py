"""Read files that may be empty, truncated, pickled, crafted or not files at all, with one clear error.

Every reader opens only regular files: a FIFO, a device or a socket named like a data file is
refused by name instead of blocking the command forever (``open_regular``).
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from PIL import Image

from ident3d.errors import Ident3dError

MAX_JSON_BYTES = 64 << 20  # manifests, results, entries, records: far larger is not ours


class NotRegularFile(OSError):
    """A path that exists but is a FIFO, device, socket or folder where a file was expected."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", str(path))

    def __str__(self) -> str:
        return self.strerror


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading only if it is a regular file (symlinks to one are fine).

    Never blocks: the file is opened non-blocking and checked with ``fstat`` before a byte is read.
    Raises FileNotFoundError, NotRegularFile (naming what it is instead) or another OSError.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFile(path, kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def open_image(path: Path) -> Iterator[Image.Image]:
    """A PIL image of a regular file (decoded lazily, like ``Image.open``)."""
    with open_regular(path) as f, Image.open(f) as image:
        yield image


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (ValueError if larger)."""
    with open_regular(path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit:,} bytes")
    return data


def _check_npy_header(f: BinaryIO) -> None:
    """Refuse, before loading, a header that claims objects or more bytes than the file holds."""
    version = np.lib.format.read_magic(f)
    read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if read_header is None:
        raise ValueError(f".npy format version {version} is not supported")
    shape, _, dtype = read_header(f)
    if dtype.hasobject:
        raise ValueError("it holds Python objects (a pickle), which are never loaded")
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    start = f.tell()
    available = f.seek(0, os.SEEK_END) - start
    if claimed > available:
        raise ValueError(f"the header claims {shape} {dtype} ({claimed:,} bytes) but the file holds "
                         f"{available:,}")
    f.seek(0)


def read_array(path: Path, error: type[Ident3dError], fix: str, mmap: bool = False) -> np.ndarray:
    """``np.load`` without pickles; any failure becomes ``error`` naming the file and ``fix``."""
    path = Path(path)
    try:
        with open_regular(path) as f:
            _check_npy_header(f)
            array = None if mmap else np.load(f, allow_pickle=False)
        if mmap:  # numpy maps only a named file; it was just shown to be a regular one
            array = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise error(f"{path}: no such file. Fix: {fix}") from None
    except (OSError, ValueError, EOFError, SyntaxError, MemoryError) as exc:  # SyntaxError: a crafted header
        raise error(f"{path}: not a readable .npy array ({exc}). Fix: {fix}") from None
    if not isinstance(array, np.ndarray):
        raise error(f"{path}: holds {type(array).__name__}, expected one array. Fix: {fix}")
    return array


def load_npy_bytes(data: bytes) -> np.ndarray:
    """An array from the bytes of one ``.npy`` file (an archive member); ValueError if it is not one."""
    buffer = io.BytesIO(data)
    try:
        _check_npy_header(buffer)
        return np.load(buffer, allow_pickle=False)
    except (OSError, EOFError, SyntaxError, MemoryError) as error:
        raise ValueError(str(error)) from None


def read_json(path: Path, error: type[Ident3dError], fix: str) -> Any:
    """A JSON document (NaN and Infinity refused); any failure becomes ``error`` naming the file."""
    return read_json_and_bytes(path, error, fix)[0]


def read_json_and_bytes(path: Path, error: type[Ident3dError], fix: str) -> tuple[Any, bytes]:
    """``read_json``, with the bytes the document was parsed from (to hash exactly what was read)."""
    path = Path(path)
    try:
        raw = read_regular(path, MAX_JSON_BYTES)
        return parse_json(raw), raw
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
