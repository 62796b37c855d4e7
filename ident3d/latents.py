"""The 3DIdent factor table, uniform sampling and positive-pair conditionals.

The 10 latents and their order follow Zimmermann et al., "Contrastive Learning Inverts the Data
Generating Process" (ICML 2021), section 6 and appendix A.4: every raw latent is uniform on [-1, 1].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from ident3d.errors import LatentError
from ident3d.readers import is_real_numeric

N_LATENTS = 10
RAW_LOW, RAW_HIGH = -1.0, 1.0
PAIR_STREAM = 1  # second key of the positives' random stream in sample_pairs


@dataclass(frozen=True)
class Factor:
    """One latent factor: where it sits in the raw vector and what it controls in the scene."""

    index: int
    name: str
    group: str
    scene_quantity: str
    unit: str
    description: str
    periodic: bool = False
    low: float = RAW_LOW
    high: float = RAW_HIGH


FACTORS: tuple[Factor, ...] = (
    Factor(0, "object_x", "position", "object location x", "scene units",
           "teapot position towards the camera (down in the image)"),
    Factor(1, "object_y", "position", "object location y", "scene units",
           "teapot position to the image right"),
    Factor(2, "object_z", "position", "object location z", "scene units",
           "teapot height above the ground"),
    Factor(3, "rotation_alpha", "rotation", "Euler X (mode XYZ)", "rad",
           "teapot rotation about the world x axis"),
    Factor(4, "rotation_beta", "rotation", "Euler Y (mode XYZ)", "rad",
           "teapot rotation about the world y axis"),
    Factor(5, "rotation_gamma", "rotation", "Euler Z (mode XYZ)", "rad",
           "teapot rotation about the world z axis"),
    Factor(6, "spotlight_angle", "lighting", "spotlight position angle theta", "rad",
           "where the spotlight stands on a half circle above the scene"),
    Factor(7, "object_hue", "colour", "object colour hue", "turns",
           "hue of the teapot's colour"),
    Factor(8, "spotlight_hue", "colour", "spotlight colour hue", "turns",
           "hue of the spotlight's colour"),
    Factor(9, "ground_hue", "colour", "ground colour hue", "turns",
           "hue of the ground (the whole background)"),
)
FACTOR_NAMES: tuple[str, ...] = tuple(f.name for f in FACTORS)

Conditional = Literal["normal", "laplace", "gennorm"]
CONDITIONALS: tuple[str, ...] = ("normal", "laplace", "gennorm")


def check_raw_latents(z: np.ndarray, what: str = "raw latents", atol: float = 1e-6) -> np.ndarray:
    """Return ``z`` as float64 (N, 10) or raise LatentError naming the first bad row and column."""
    z = np.asarray(z)
    if z.ndim != 2 or z.shape[1] != N_LATENTS:
        raise LatentError(
            f"{what}: expected an array of shape (N, {N_LATENTS}), got shape {z.shape}. "
            f"Fix: pass one row of {N_LATENTS} raw latents per image."
        )
    if not is_real_numeric(z):
        raise LatentError(f"{what}: expected real numbers, got dtype {z.dtype}. "
                          "Fix: save a float array (complex, bool and text are refused).")
    z = z.astype(np.float64, copy=False)
    bad = ~np.isfinite(z) | (z < RAW_LOW - atol) | (z > RAW_HIGH + atol)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise LatentError(
            f"{what}: row {row}, column {col} ({FACTOR_NAMES[col]}) is {z[row, col]!r}; "
            f"expected a finite value in [{RAW_LOW}, {RAW_HIGH}]. "
            f"Fix: raw latents live in the box [-1, 1]^{N_LATENTS}; rescale or clip them."
        )
    return np.clip(z, RAW_LOW, RAW_HIGH)


def sample_uniform(n: int, seed: int) -> np.ndarray:
    """Draw ``n`` raw latent vectors uniformly from [-1, 1]^10 as float32."""
    if n < 0:
        raise LatentError(f"number of samples must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    return rng.uniform(RAW_LOW, RAW_HIGH, size=(n, N_LATENTS)).astype(np.float32)


def sample_pairs(n: int, seed: int, kind: str = "normal", scale: float | np.ndarray = 0.1,
                 beta: float | None = None) -> np.ndarray:
    """``n`` exact positive pairs as ``(2n, 10)`` float32 rows: anchor ``i`` at row ``2i``, drawn
    uniformly as ``sample_uniform(n, seed)``, and its positive at ``2i + 1``, drawn from the
    truncated conditional around it with its own stream (no snapping to rendered latents)."""
    anchors = sample_uniform(n, seed)
    positives = sample_conditional(anchors, np.random.default_rng([seed, PAIR_STREAM]), kind, scale, beta)
    rows = np.empty((2 * n, N_LATENTS), dtype=np.float32)
    rows[0::2], rows[1::2] = anchors, positives
    return rows


def broadcast_scale(scale: float | np.ndarray, dim: int = N_LATENTS) -> np.ndarray:
    """One positive scale per latent; a scalar broadcasts to all of them."""
    s = np.asarray(scale, dtype=np.float64)
    if s.ndim == 0:
        s = np.full(dim, float(s))
    if s.shape != (dim,):
        raise LatentError(f"scale: expected a scalar or {dim} values (one per latent), got {s.shape}")
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise LatentError(f"scale: expected finite positive values, got {s.tolist()}")
    return s


def conditional_distribution(kind: str, beta: float | None = None) -> stats.rv_continuous:
    """The standardised (location 0, scale 1) distribution of a positive-pair conditional.

    ``normal``: scale is the standard deviation; ``laplace``: scale is b (std = b * sqrt(2));
    ``gennorm``: density proportional to exp(-|x / scale|^beta) (beta = 3 in the paper's appendix).
    """
    if kind == "normal":
        return stats.norm()
    if kind == "laplace":
        return stats.laplace()
    if kind == "gennorm":
        if beta is None or not beta > 0:
            raise LatentError(f"conditional 'gennorm' needs an exponent beta > 0, got {beta!r}")
        return stats.gennorm(beta)
    raise LatentError(f"unknown conditional {kind!r}; expected one of {', '.join(CONDITIONALS)}")


def sample_conditional(
    z: np.ndarray,
    rng: np.random.Generator,
    kind: str = "normal",
    scale: float | np.ndarray = 0.1,
    beta: float | None = None,
) -> np.ndarray:
    """Draw one positive per row of ``z`` from the conditional around it, truncated to [-1, 1]."""
    z = np.asarray(z, dtype=np.float64)
    return conditional_from_uniform(z, rng.random(z.shape), kind, scale, beta)


def conditional_from_uniform(
    z: np.ndarray,
    u: np.ndarray,
    kind: str = "normal",
    scale: float | np.ndarray = 0.1,
    beta: float | None = None,
) -> np.ndarray:
    """Push uniform numbers ``u`` in [0, 1) through the truncated conditional around ``z``.

    Truncation is exact and vectorised: ``u`` is mapped between the CDF values of the two bounds
    and through the inverse CDF, so there is no rejection loop (the original redrew until inside).
    Taking ``u`` from the caller lets each item of a batch use its own random stream.
    """
    z = np.asarray(z, dtype=np.float64)
    dist = conditional_distribution(kind, beta)
    s = broadcast_scale(scale, z.shape[-1])
    lo = dist.cdf((RAW_LOW - z) / s)
    hi = dist.cdf((RAW_HIGH - z) / s)
    z_pos = z + s * dist.ppf(lo + np.asarray(u) * (hi - lo))
    # ppf can land a hair outside the box in floating point; the bounds are exact by construction.
    return np.clip(z_pos, RAW_LOW, RAW_HIGH)
