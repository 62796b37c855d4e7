"""Load what users submit without ever unpickling it or running it in this process.

``.pt2`` programs and safetensors weights (with a registered ``--arch``) run in the sandbox
(``ident3d.sandbox``): checked as data here, rebuilt and run in a locked-down child process that only
ever sees image batches. ``.npy`` embeddings are read as data and marked self-reported.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ident3d.architectures import known
from ident3d.atomic import sha256_file
from ident3d.errors import SubmissionError
from ident3d.readers import SAFETENSORS_MAX_HEADER, is_real_numeric, read_array, safetensors_header
from ident3d.sandbox.host import SandboxedModel
from ident3d.sandbox.limits import SandboxLimits
from ident3d.submission_files import submission_kind


@dataclass
class Submission:
    path: Path
    kind: str  # "exported-program", "safetensors", "embeddings"
    sha256: str
    model: SandboxedModel | None = None
    embeddings: np.ndarray | None = None
    arch: str | None = None  # the registered architecture safetensors weights were loaded into
    module: Any = None  # a caller's own torch.nn.Module, run in the caller's process

    @property
    def self_reported(self) -> bool:
        """Scores of features this package did not compute from a file under its sandbox."""
        return self.kind in ("embeddings", "module")

    def close(self) -> None:
        if self.model is not None:
            self.model.close()


def module_submission(module: Any) -> Submission:
    """A caller's in-memory ``torch.nn.Module``: their own code, run in their process, so its score
    is self-reported; identified by the SHA-256 of its parameter and buffer names, dtypes and bytes."""
    import torch  # the caller already has it: they pass a module

    digest = hashlib.sha256()
    for key, tensor in module.state_dict().items():
        raw = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)  # any dtype, bf16 too
        digest.update(key.encode() + b"\0" + str(tensor.dtype).encode() + b"\0" + raw.numpy().tobytes())
    return Submission(path=Path(f"{type(module).__name__} (in-process)"), kind="module",
                      sha256=digest.hexdigest(), module=module)


def load_submission(path: Path, arch: str | None = None, device: str = "cpu", batch_size: int = 256,
                    limits: SandboxLimits | None = None) -> Submission:
    """A submission ready to score; models are started in the sandbox (close() stops it)."""
    path = Path(path)
    kind = submission_kind(path)
    if kind == "exported-program":
        model = SandboxedModel(path, "exported-program", device=device, batch_size=batch_size,
                               limits=limits)
        return Submission(path, "exported-program", model.sha256, model=model)
    if kind == "safetensors":
        arch = _safetensors_arch(path, arch)
        model = SandboxedModel(path, "safetensors", arch=arch, device=device, batch_size=batch_size,
                               limits=limits)
        return Submission(path, "safetensors", model.sha256, model=model, arch=arch)
    sha = sha256_file(path)
    embeddings = read_array(path, SubmissionError, "save the features with numpy.save as an (N, d) float "
                            "array, one row per test image in index order")
    return Submission(path, "embeddings", sha, embeddings=embeddings)


def _safetensors_arch(path: Path, arch: str | None) -> str:
    """The architecture to load the weights into: --arch, else the file's metadata; registered."""
    with path.open("rb") as f:
        head = f.read(8)
        head += f.read(min(int.from_bytes(head, "little"), SAFETENSORS_MAX_HEADER)) if len(head) == 8 else b""
    try:
        named = safetensors_header(head).get("__metadata__", {}).get("arch")
    except ValueError as error:
        raise SubmissionError(f"{path}: not a readable safetensors file ({error}). Fix: save the "
                              "weights with safetensors.torch.save_file.") from None
    arch = arch or (named if isinstance(named, str) else None)
    if not arch:
        raise SubmissionError(f"{path}: safetensors weights need --arch NAME (the file's metadata "
                              "names none).")
    if arch not in known():
        raise SubmissionError(f"{path}: --arch {arch[:60]!r} is not a registered architecture (known: "
                              f"{', '.join(known()) or 'none'}). Fix: use a registered name, or export "
                              "the model to .pt2.")
    return arch


def check_features(h: np.ndarray, n: int, source: str) -> np.ndarray:
    """Features as a float64 (N, d) array; refuses anything but finite real numbers."""
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
    return h


@dataclass(frozen=True)
class Standardisation:
    """Zero mean and unit variance per column of the features it was fitted on (constant columns
    become 0), without overflow; applied unchanged to other features of the same model.

    Every metric is invariant to a per-feature affine map, so standardising changes no score in
    exact arithmetic; in floating point it keeps features scaled by 1e-150 or 1e150 (or shifted by
    a large offset) from under- or overflowing inside the fits. Features of out-of-distribution
    splits must go through the in-distribution transform: standardised on their own statistics,
    each region would be re-centred and the shift that carries its held-out latents removed.
    """

    scale: np.ndarray
    mean: np.ndarray
    residual_mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, h: np.ndarray) -> Standardisation:
        scale = np.abs(h).max(0)
        scale = np.where(scale > 0, scale, 1.0)
        mean = (h / scale).mean(0)
        residual_mean = (h / scale - mean).mean(0)  # what rounding left of a large offset
        std = (h / scale - mean - residual_mean).std(0)
        return cls(scale, mean, residual_mean, np.where(std > 0, std, 1.0))

    def __call__(self, h: np.ndarray, source: str) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            out = (h / self.scale - self.mean - self.residual_mean) / self.std
        if not np.isfinite(out).all():
            raise SubmissionError(f"{source}: features overflow on the in-distribution scale (they lie "
                                  "about 1e300 times further out than the test split's). Fix: return "
                                  "features of comparable size for every split.")
        return out
