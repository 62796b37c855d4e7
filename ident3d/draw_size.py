"""How large a fresh draw must be: the upward bias and the spread of a matched |correlation| on n images.

A fresh draw scores each latent by the absolute Pearson correlation between the latent and the
feature the public split's read-out matched to it. On few images that absolute value is biased
upwards: a feature that carries nothing of its latent (true correlation 0) still scores about
sqrt(2 / (pi n)), so a lookup table of the public split, which answers every unseen image with the
latents of a public one, looks on a few images like a model that reads them. This module measures,
by simulating bivariate normal pairs, the bias and the 95% half-width of one latent's |r| against
n, and chooses the smallest n of a fixed grid at which a latent the model cannot read gains at most
``NULL_BIAS_LIMIT`` of MCC by chance. The tracks' ``fresh_min`` is that n (a test checks it);
docs/submissions.md shows the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIZES = (4, 16, 64, 250, 500, 1000, 2000, 5000)
CORRELATIONS = (0.0, 0.5, 0.9)
NULL_BIAS_LIMIT = 0.02  # at most 2 points of MCC for a latent the model does not read
TRIALS = 1000
SEED = 0


@dataclass(frozen=True)
class Row:
    n: int
    correlation: float
    bias: float  # mean |r| minus |correlation|
    half_width: float  # half the central 95% range of |r|


def simulate(n: int, correlation: float, trials: int = TRIALS, seed: int = SEED) -> Row:
    """|Pearson r| of ``trials`` samples of ``n`` bivariate normal pairs with the given correlation."""
    rng = np.random.default_rng([seed, n, int(round(1000 * correlation))])
    z = rng.standard_normal((trials, n))
    h = correlation * z + np.sqrt(1 - correlation ** 2) * rng.standard_normal((trials, n))
    z -= z.mean(axis=1, keepdims=True)
    h -= h.mean(axis=1, keepdims=True)
    r = np.abs((z * h).sum(axis=1) / np.sqrt((z * z).sum(axis=1) * (h * h).sum(axis=1)))
    low, high = np.quantile(r, [0.025, 0.975])
    return Row(n, correlation, float(r.mean() - abs(correlation)), float((high - low) / 2))


def table(sizes: tuple[int, ...] = SIZES, correlations: tuple[float, ...] = CORRELATIONS) -> list[Row]:
    return [simulate(n, rho) for n in sizes for rho in correlations]


def minimum_draw(rows: list[Row]) -> int:
    """The smallest n whose null bias (correlation 0) is within ``NULL_BIAS_LIMIT``."""
    return min(r.n for r in rows if r.correlation == 0.0 and r.bias <= NULL_BIAS_LIMIT)


def markdown() -> str:
    """The table docs/submissions.md shows, and the rule's choice."""
    rows = table()
    chosen = minimum_draw(rows)
    header = "| images | " + " | ".join(f"bias at ρ = {rho:g} | ±95% at ρ = {rho:g}" for rho in CORRELATIONS)
    lines = [f"{header} |", "|---:|" + "---:|" * (2 * len(CORRELATIONS))]
    for n in SIZES:
        cells = [f"{100 * r.bias:+.2f} | {100 * r.half_width:.2f}" for r in rows if r.n == n]
        mark = " **(minimum)**" if n == chosen else ""
        lines.append(f"| {n:,}{mark} | " + " | ".join(cells) + " |")
    return "\n".join([
        f"One latent's |Pearson r| on n images, in points of MCC, over {TRIALS:,} simulated draws of "
        "bivariate normal pairs with true correlation ρ (`ident3d.draw_size`). A verified draw needs the "
        f"smallest n at which a latent the model cannot read (ρ = 0) gains at most "
        f"{100 * NULL_BIAS_LIMIT:g} points by chance: **{chosen:,} images** (each track's `fresh_min`).",
        "", *lines])
