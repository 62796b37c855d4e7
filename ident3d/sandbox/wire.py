"""Messages between the evaluator and its sandbox: a tag byte, a length, a payload, over pipes.

Arrays travel as a small JSON header (dtype, shape) and their raw bytes. Every read is bounded by the
caller's size limit and, on the evaluator's side, by a deadline, so a child that stalls, floods or
lies about sizes cannot hang or exhaust the parent.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

import numpy as np

WARM_UP, MODEL, BATCH, QUIT = b"W", b"M", b"B", b"Q"  # parent -> child
READY, FEATURES, FAILED = b"R", b"F", b"E"  # child -> parent
HEADER = struct.Struct("<cQ")
DTYPES = {"float32"}


class WireError(Exception):
    """The other side closed the pipe, broke the format, or missed the deadline."""


def _wait(fd: int, deadline: float | None, write: bool) -> None:
    if deadline is None:
        return
    left = deadline - time.monotonic()
    ready = select.select([], [fd], [], max(left, 0))[1] if write else select.select(
        [fd], [], [], max(left, 0))[0]
    if not ready:
        raise WireError("timeout")


def send(fd: int, tag: bytes, payload: bytes | memoryview = b"", deadline: float | None = None) -> None:
    data = memoryview(HEADER.pack(tag, len(payload)) + bytes(payload))
    while data:
        _wait(fd, deadline, write=True)
        try:
            written = os.write(fd, data[: 1 << 20])
        except (BrokenPipeError, BlockingIOError, OSError) as error:
            if isinstance(error, BlockingIOError):
                continue
            raise WireError("closed") from None
        data = data[written:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        _wait(fd, deadline, write=False)
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except BlockingIOError:
            continue
        except OSError:
            raise WireError("closed") from None
        if not chunk:
            raise WireError("closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, max_bytes: int, deadline: float | None = None) -> tuple[bytes, bytes]:
    tag, size = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    if size > max_bytes:
        raise WireError(f"a message of {size} bytes (the limit is {max_bytes})")
    return tag, _read_exact(fd, size, deadline)


def pack_settings(settings: dict, archive: bytes) -> bytes:
    header = json.dumps(settings).encode()
    return struct.pack("<I", len(header)) + header + archive


def unpack_settings(payload: bytes) -> tuple[dict, bytes]:
    (length,) = struct.unpack_from("<I", payload)
    return json.loads(payload[4:4 + length]), payload[4 + length:]


def pack_array(array: np.ndarray) -> bytes:
    array = np.ascontiguousarray(array, dtype=np.float32)
    header = json.dumps({"dtype": "float32", "shape": list(array.shape)}).encode()
    return struct.pack("<I", len(header)) + header + array.tobytes()


def unpack_array(payload: bytes, ndim: int) -> np.ndarray:
    """The array in ``payload``; raises WireError unless its header matches its bytes exactly."""
    try:
        (length,) = struct.unpack_from("<I", payload)
        header = json.loads(payload[4:4 + length]) if length <= 256 else None
        shape = header["shape"]
        ok = (header["dtype"] in DTYPES and isinstance(shape, list) and len(shape) == ndim
              and all(type(s) is int and 0 <= s < 2**31 for s in shape))
    except (struct.error, ValueError, KeyError, TypeError, RecursionError):
        ok = False
    if not ok:
        raise WireError("an array header that is not (float32, shape)")
    body = memoryview(payload)[4 + length:]
    if len(body) != int(np.prod(shape)) * 4:
        raise WireError(f"an array of shape {shape} with {len(body)} bytes")
    return np.frombuffer(body, dtype=np.float32).reshape(shape)
