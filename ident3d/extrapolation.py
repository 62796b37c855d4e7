"""Read-out extrapolation: do the read-outs hold outside the region they were fitted on?

No new training: the linear and kernel read-outs of the protocol are fitted on the part of the fit set
where a latent stays at or below ``HELD_OUT`` (raw value u in [-1, 1]; the top quarter of the range is
held out) and scored on the score-set points above it. An encoder that recovers a latent up to an
affine map extrapolates with the linear read-out; one that is only informative (a nonlinear,
invertible code) does not, and the kernel read-out, whatever its in-distribution score, predicts
near the edge of what it saw. Composition: for the latent pairs (0, 1), (2, 3), ..., the read-outs
are fitted where not both latents exceed ``HELD_OUT`` and scored on the corner where both do.

Scores are R² against each latent's variance over the whole score set (1 - MSE / Var), so they read
on the in-distribution R² scale (R² against the held-out band's own, four times smaller spread would
turn a small constant error into a large loss); clipped to [0, 1]. The kernel read-out reuses the
(alpha, gamma) the protocol chose for the latent in distribution.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ident3d.metrics import Readouts, latent_variance
from ident3d.parallel_fits import InOrder

HELD_OUT = 0.5


@dataclass(frozen=True)
class ExtrapolationReadouts:
    """The read-outs of read-out extrapolation, fitted once on a fit set and scored on any set (the
    protocol's score rows, a fresh draw): each latent's fitted where it stays at most ``HELD_OUT``, and
    each latent pair's (0, 1), (2, 3), ... fitted where not both exceed it."""

    latents: tuple[Readouts, ...]
    n_fit: tuple[int, ...]
    corners: tuple[Readouts, ...]

    @classmethod
    def fit(cls, z_fit: np.ndarray, h_fit: np.ndarray, kernel: list[dict[str, float]],
            pool: Executor | None = None) -> ExtrapolationReadouts:
        """Each latent's and each pair's read-outs, every one a task of ``pool``
        (``ident3d.parallel_fits``; none: one after the other)."""
        k, pairs = z_fit.shape[1], range(0, z_fit.shape[1] - 1, 2)
        columns = [[j] for j in range(k)] + [[a, a + 1] for a in pairs]
        rows = [z_fit[:, j] <= HELD_OUT for j in range(k)] + \
            [~((z_fit[:, a] > HELD_OUT) & (z_fit[:, a + 1] > HELD_OUT)) for a in pairs]

        def fitted(fit: tuple[np.ndarray, list[int]]) -> Readouts:
            where, latents = fit
            return Readouts.fit(h_fit[where], z_fit[where][:, latents], [kernel[j] for j in latents])

        readouts = list((pool or InOrder()).map(fitted, zip(rows, columns, strict=True)))
        return cls(tuple(readouts[:k]), tuple(int(where.sum()) for where in rows[:k]), tuple(readouts[k:]))

    def score(self, z_score: np.ndarray, h_score: np.ndarray, names: list[str]) -> dict[str, Any]:
        """Per latent and mean extrapolation R², and the composition corners (the module docstring)."""
        variance = latent_variance(z_score)
        per_latent = []
        for j, (name, readouts, n_fit) in enumerate(zip(names, self.latents, self.n_fit, strict=True)):
            rows = z_score[:, j] > HELD_OUT
            ((linear, nonlinear),) = readouts.transfer_r2(h_score[rows], z_score[rows][:, [j]], variance[[j]])
            per_latent.append({"factor": name, "linear_r2": linear, "kernel_r2": nonlinear,
                               "n_fit": n_fit, "n_score": int(rows.sum())})
        corners = []
        for a, readouts in zip(range(0, len(names) - 1, 2), self.corners, strict=True):
            rows = (z_score[:, a] > HELD_OUT) & (z_score[:, a + 1] > HELD_OUT)
            pair = readouts.transfer_r2(h_score[rows], z_score[rows][:, [a, a + 1]], variance[[a, a + 1]])
            corners.append({"factors": [names[a], names[a + 1]], "n_score": int(rows.sum()),
                            "linear_r2": float(np.mean([p[0] for p in pair])),
                            "kernel_r2": float(np.mean([p[1] for p in pair]))})
        return {"held_out": f"u > {HELD_OUT}", "linear_r2": _mean(per_latent, "linear_r2"),
                "kernel_r2": _mean(per_latent, "kernel_r2"), "per_latent": per_latent,
                "composition": {"linear_r2": _mean(corners, "linear_r2"),
                                "kernel_r2": _mean(corners, "kernel_r2"), "corners": corners}}


def readout_extrapolation(z_fit: np.ndarray, h_fit: np.ndarray, z_score: np.ndarray, h_score: np.ndarray,
                          kernel: list[dict[str, float]], names: list[str]) -> dict[str, Any]:
    """Per latent and mean extrapolation R², and the composition corners, of read-outs fitted on
    ``(z_fit, h_fit)`` and scored on ``(z_score, h_score)``."""
    return ExtrapolationReadouts.fit(z_fit, h_fit, kernel).score(z_score, h_score, names)


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    return float(np.mean([row[key] for row in rows])) if rows else None
