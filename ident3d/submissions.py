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
from ident3d.export_archive import load_exported_program
from ident3d.readers import is_real_numeric, read_array
from ident3d.registry import build

PICKLE_SUFFIXES = {".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".bin"}
EXPORT_HELP = ("Fix: export the encoder with torch.export and a dynamic batch size, as in the README "
               "(`torch.export.save(torch.export.export(model.eval(), (torch.rand(2, 3, 224, 224),), "
               "dynamic_shapes=({0: torch.export.Dim.AUTO},)), 'encoder.pt2')`), or save its weights "
               "with safetensors and pass --arch, or submit embeddings as .npy.")


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
        raise SubmissionError(f"{path}: no such file. Fix: pass the path of your exported encoder "
                              "(.pt2), weights (.safetensors) or embeddings (.npy).")
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        raise SubmissionError(f"{path}: pickle-based files are refused because loading them runs "
                              f"arbitrary code. {EXPORT_HELP}")
    sha = sha256_file(path)
    if suffix == ".pt2":
        program = load_exported_program(path)
        return Submission(path, "exported-program", sha, model=program.module())
    if suffix == ".safetensors":
        model, arch = _from_safetensors(path, arch)
        return Submission(path, "safetensors", sha, model=model, arch=arch)
    if suffix == ".npy":
        embeddings = read_array(path, SubmissionError, "save the features with numpy.save as an "
                                "(N, d) float array, one row per test image in index order")
        return Submission(path, "embeddings", sha, embeddings=embeddings)
    raise SubmissionError(f"{path}: unknown submission type {suffix!r}; expected .pt2, "
                          f".safetensors (with --arch) or .npy. {EXPORT_HELP}")


def _from_safetensors(path: Path, arch: str | None) -> tuple[torch.nn.Module, str]:
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
        config = json.loads(metadata.get("config", "{}"), parse_constant=_refuse_constant)
        tensors = load_file(str(path))
    except Exception as error:  # safetensors raises its own error type for a bad header or body
        raise SubmissionError(f"{path}: not a readable safetensors file ({type(error).__name__}: "
                              f"{error}). Fix: save the weights with safetensors.torch.save_file."
                              ) from None
    arch = arch or metadata.get("arch")
    if not arch:
        raise SubmissionError(f"{path}: safetensors weights need --arch NAME (the file's metadata "
                              "names none).")
    try:
        model = build(arch, config)
    except SubmissionError as error:
        raise SubmissionError(f"{path}: {error}") from None
    try:
        model.load_state_dict(tensors)
    except RuntimeError as error:
        first = str(error).strip().splitlines()[0:2]
        raise SubmissionError(f"{path}: weights do not fit architecture {arch!r}: "
                              f"{' '.join(first)}") from None
    return model, arch


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed in the config")


def check_features(h: np.ndarray, n: int, source: str) -> np.ndarray:
    """Features as a standardised float64 (N, d) array; refuses anything but finite real numbers.

    Every metric is invariant to a per-feature affine map, so standardising changes no score in
    exact arithmetic; in floating point it keeps features scaled by 1e-150 or 1e150 (or shifted by
    a large offset) from under- or overflowing inside the fits.
    """
    h = np.asarray(h)
    if not is_real_numeric(h):
        raise SubmissionError(f"{source}: expected real numbers, found dtype {h.dtype}. Fix: return "
                              "float features (complex, bool, text and records are refused).")
    if h.ndim != 2 or h.shape[1] < 1:
        raise SubmissionError(f"{source}: expected features of shape (N, d) with d >= 1, found shape "
                              f"{h.shape}. Fix: flatten each image's features into one row.")
    if len(h) != n:
        raise SubmissionError(f"{source}: expected {n} rows (one per test image, in index order), "
                              f"found {len(h)}. Fix: encode every image of the test split.")
    h = h.astype(np.float64)
    bad = ~np.isfinite(h)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise SubmissionError(f"{source}: {int(bad.sum())} non-finite values (NaN or infinity), "
                              f"first at row {row}, column {col}. Fix: submit finite features.")
    return standardise(h)


def standardise(h: np.ndarray) -> np.ndarray:
    """Zero mean and unit variance per column (constant columns become 0), without overflow."""
    scale = np.abs(h).max(0)
    h = h / np.where(scale > 0, scale, 1.0)
    h = h - h.mean(0)
    h = h - h.mean(0)  # a second pass removes what rounding left of a large offset
    std = h.std(0)
    return h / np.where(std > 0, std, 1.0)
