"""Crafted files for the hostile-input tests: archives that run code when unpickled, bad arrays."""

from __future__ import annotations

import io
import json
import pickle
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch


class Payload:
    """Unpickles to ``value`` after running ``code``: ``eval`` of an expression that does both."""

    def __init__(self, code: str, value: str = "None") -> None:
        self.expression = f"exec({code!r}) or {value}"

    def __reduce__(self):
        return (eval, (self.expression,))


def touch_code(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('pwned')"


def rewrite_zip(src: Path, dst: Path, replace: dict[str, bytes | Callable[[bytes], bytes]] | None = None,
                add: dict[str, bytes] | None = None) -> Path:
    """Copy a .pt2 archive, replacing or adding members (names relative to the archive's root)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        root = zin.namelist()[0].split("/")[0]
        for info in zin.infolist():
            name = info.filename[len(root) + 1:]
            data = zin.read(info)
            if replace and name in replace:
                new = replace[name]
                data = new(data) if callable(new) else new
            zout.writestr(info.filename, data)
        for name, data in (add or {}).items():
            zout.writestr(f"{root}/{name}", data)
    return dst


def edit_json(change: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def apply(data: bytes) -> bytes:
        document = json.loads(data)
        change(document)
        return json.dumps(document).encode()

    return apply


def quiet_sample_inputs(marker: Path, size: int) -> bytes:
    """torch.save of sample inputs that run code and still give valid inputs (the quiet attack)."""
    buffer = io.BytesIO()
    value = f"((__import__('torch').zeros(2, 3, {size}, {size}),), {{}})"
    torch.save(Payload(touch_code(marker), value), buffer)
    return buffer.getvalue()


def pickled_weights(marker: Path) -> dict[str, Callable[[bytes], bytes] | bytes]:
    """Weights config that marks weight_0 as a pickle, and weight_0 a pickle that runs code."""
    def mark(document: dict) -> None:
        first = next(iter(document["config"]))
        document["config"][first]["use_pickle"] = True

    buffer = io.BytesIO()
    torch.save(Payload(touch_code(marker), "__import__('torch').zeros(1)"), buffer)
    return {"data/weights/model_weights_config.json": edit_json(mark),
            "data/weights/weight_0": buffer.getvalue()}


def node_target(target: str) -> dict[str, Callable[[bytes], bytes]]:
    def change(document: dict) -> None:
        document["graph_module"]["graph"]["nodes"][0]["target"] = target

    return {"models/model.json": edit_json(change)}


def shape_expression(marker: Path) -> dict[str, Callable[[bytes], bytes]]:
    """A symbolic size whose text sympify would evaluate as Python."""
    def change(document: dict) -> None:
        for value in document["graph_module"]["graph"]["tensor_values"].values():
            for size in value["sizes"]:
                if "as_expr" in size:
                    size["as_expr"]["expr_str"] = f"__import__('builtins').exec({touch_code(marker)!r})"
                    return
        raise AssertionError("the export has no symbolic size")

    return {"models/model.json": edit_json(change)}


def tar_with(kind: str) -> bytes:
    """A 3DIdent-shaped archive with one member of a refused kind next to a valid split."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        latents = io.BytesIO()
        np.save(latents, np.zeros((1, 10), np.float32))
        info = tarfile.TarInfo("3dident/test/raw_latents.npy")
        info.size = len(latents.getvalue())
        tar.addfile(info, io.BytesIO(latents.getvalue()))
        evil = tarfile.TarInfo("3dident/test/images/0.png")
        if kind == "symlink":
            evil.type, evil.linkname = tarfile.SYMTYPE, "../../../../etc/passwd"
        elif kind == "hardlink":
            evil.type, evil.linkname = tarfile.LNKTYPE, "3dident/test/raw_latents.npy"
        elif kind == "fifo":
            evil.type = tarfile.FIFOTYPE
        elif kind == "device":
            evil.type, evil.devmajor, evil.devminor = tarfile.CHRTYPE, 1, 3
        tar.addfile(evil)
    return buffer.getvalue()


def pickle_bytes(marker: Path) -> bytes:
    return pickle.dumps(Payload(touch_code(marker)))


def bomb_png(side: int = 30000) -> bytes:
    """A PNG header claiming side x side pixels (a decompression bomb) with no pixel data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b""))
            + chunk(b"IEND", b""))
