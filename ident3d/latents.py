"""Uniform sampling and positive-pair conditionals of raw latents in [-1, 1].

The 10 latents of 3DIdent and their order follow Zimmermann et al., "Contrastive Learning Inverts the
Data Generating Process" (ICML 2021), section 6 and appendix A.4; a variant's spec
(``ident3d.variants``) names them and says what each drives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ident3d.errors import LatentError

if TYPE_CHECKING:
    from scipy import stats

N_LATENTS = 10
RAW_LOW, RAW_HIGH = -1.0, 1.0
PAIR_STREAM = 1  # second key of the positives' random stream in sample_pairs


CONDITIONALS: tuple[str, ...] = ("normal", "laplace", "gennorm")


def sample_uniform(n: int, seed: int) -> np.ndarray:
    """Draw ``n`` raw latent vectors uniformly from [-1, 1]^10 as float32."""
    if n < 0:
        raise LatentError(f"number of samples must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    return rng.uniform(RAW_LOW, RAW_HIGH, size=(n, N_LATENTS)).astype(np.float32)


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
    from scipy import stats  # here, not at the top: it takes about a second, and every command imports us

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
    low: float = RAW_LOW,
    high: float = RAW_HIGH,
) -> np.ndarray:
    """Push uniform numbers ``u`` in [0, 1) through the conditional around ``z`` truncated to
    [``low``, ``high``] (infinite bounds: no truncation).

    Truncation is exact and vectorised: ``u`` is mapped between the CDF values of the two bounds
    and through the inverse CDF, so there is no rejection loop (the original redrew until inside).
    Taking ``u`` from the caller lets each item of a batch use its own random stream.
    """
    z = np.asarray(z, dtype=np.float64)
    dist = conditional_distribution(kind, beta)
    s = broadcast_scale(scale, z.shape[-1])
    lo = dist.cdf((low - z) / s)
    hi = dist.cdf((high - z) / s)
    z_pos = z + s * dist.ppf(lo + np.asarray(u) * (hi - lo))
    # ppf can land a hair outside the box in floating point; the bounds are exact by construction.
    return np.clip(z_pos, low, high)
