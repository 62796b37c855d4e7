"""Load what users submit without ever unpickling it: ``.pt2``, safetensors + arch, or ``.npy``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ident3d.atomic import sha256_file
from ident3d.errors import SubmissionError
from ident3d.registry import build

PICKLE_SUFFIXES = {".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".bin"}
EXPORT_HELP = ("Fix: export the encoder with `torch.export.save(torch.export.export(model.eval(), "
               "(torch.rand(1, 3, 224, 224),)), 'encoder.pt2')`, or save its weights with "
               "safetensors and pass --arch, or submit embeddings as .npy.")


@dataclass
class Submission:
    path: Path
    kind: str  # "exported-program", "safetensors", "embeddings"
    sha256: str
    model: Callable[[torch.Tensor], torch.Tensor] | None = None
    embeddings: np.ndarray | None = None
    arch: str | None = None  # the registered architecture safetensors weights were loaded into

    @property
    def self_reported(self) -> bool:
        return self.kind == "embeddings"


def load_submission(path: Path, arch: str | None = None) -> Submission:
    path = Path(path)
    if not path.is_file():
        raise SubmissionError(f"{path}: no such file.")
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        raise SubmissionError(f"{path}: pickle-based files are refused because loading them runs "
                              f"arbitrary code. {EXPORT_HELP}")
    sha = sha256_file(path)
    if suffix == ".pt2":
        try:
            program = torch.export.load(str(path))
        except Exception as error:  # torch raises many types for a bad archive
            raise SubmissionError(f"{path}: not a torch.export program ({error}). {EXPORT_HELP}"
                                  ) from error
        return Submission(path, "exported-program", sha, model=program.module())
    if suffix == ".safetensors":
        model, arch = _from_safetensors(path, arch)
        return Submission(path, "safetensors", sha, model=model, arch=arch)
    if suffix == ".npy":
        try:
            embeddings = np.load(path, allow_pickle=False)
        except ValueError as error:
            raise SubmissionError(f"{path}: not a plain numeric .npy array ({error}).") from error
        return Submission(path, "embeddings", sha, embeddings=embeddings)
    raise SubmissionError(f"{path}: unknown submission type {suffix!r}; expected .pt2, "
                          f".safetensors (with --arch) or .npy. {EXPORT_HELP}")


def _from_safetensors(path: Path, arch: str | None) -> tuple[torch.nn.Module, str]:
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
    arch = arch or metadata.get("arch")
    if not arch:
        raise SubmissionError(f"{path}: safetensors weights need --arch NAME (the file's metadata "
                              "names none).")
    config = json.loads(metadata.get("config", "{}"))
    model = build(arch, config)
    try:
        model.load_state_dict(load_file(str(path)))
    except RuntimeError as error:
        raise SubmissionError(f"{path}: weights do not fit architecture {arch!r}: {error}") from error
    return model, arch


def check_features(h: np.ndarray, n: int, source: str) -> np.ndarray:
    """Features must be a finite 2-D array with one row per test image."""
    h = np.asarray(h)
    if h.ndim != 2:
        raise SubmissionError(f"{source}: expected features of shape (N, d), found shape {h.shape}.")
    if len(h) != n:
        raise SubmissionError(f"{source}: expected {n} rows (one per test image, in index order), "
                              f"found {len(h)}.")
    if not np.issubdtype(h.dtype, np.number):
        raise SubmissionError(f"{source}: expected numbers, found dtype {h.dtype}.")
    bad = ~np.isfinite(h)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise SubmissionError(f"{source}: {int(bad.sum())} non-finite values, first in row {row}.")
    return h.astype(np.float64)
