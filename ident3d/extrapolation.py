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

from typing import Any

import numpy as np

from ident3d.metrics import latent_variance, transfer_r2

HELD_OUT = 0.5


def _scores(z_fit, h_fit, z_score, h_score, fit_rows, score_rows, latents, kernel, variance):
    """Linear and kernel R² of ``latents`` fitted on ``fit_rows`` and scored on ``score_rows``."""
    return [transfer_r2(h_fit[fit_rows], z_fit[fit_rows, j], h_score[score_rows], z_score[score_rows, j],
                        kernel[j], variance[j]) for j in latents]


def readout_extrapolation(z_fit: np.ndarray, h_fit: np.ndarray, z_score: np.ndarray, h_score: np.ndarray,
                          kernel: list[dict[str, float]], names: list[str]) -> dict[str, Any]:
    """Per latent and mean extrapolation R², and the composition corners (see the module docstring)."""
    variance = latent_variance(z_score)
    per_latent = []
    for j, name in enumerate(names):
        fit_rows, score_rows = z_fit[:, j] <= HELD_OUT, z_score[:, j] > HELD_OUT
        ((linear, nonlinear),) = _scores(z_fit, h_fit, z_score, h_score, fit_rows, score_rows, [j], kernel,
                                         variance)
        per_latent.append({"factor": name, "linear_r2": linear, "kernel_r2": nonlinear,
                           "n_fit": int(fit_rows.sum()), "n_score": int(score_rows.sum())})
    corners = []
    for a in range(0, len(names) - 1, 2):
        fit_rows = ~((z_fit[:, a] > HELD_OUT) & (z_fit[:, a + 1] > HELD_OUT))
        score_rows = (z_score[:, a] > HELD_OUT) & (z_score[:, a + 1] > HELD_OUT)
        pair = _scores(z_fit, h_fit, z_score, h_score, fit_rows, score_rows, [a, a + 1], kernel, variance)
        corners.append({"factors": [names[a], names[a + 1]], "n_score": int(score_rows.sum()),
                        "linear_r2": float(np.mean([p[0] for p in pair])),
                        "kernel_r2": float(np.mean([p[1] for p in pair]))})
    return {"held_out": f"u > {HELD_OUT}", "linear_r2": _mean(per_latent, "linear_r2"),
            "kernel_r2": _mean(per_latent, "kernel_r2"), "per_latent": per_latent,
            "composition": {"linear_r2": _mean(corners, "linear_r2"),
                            "kernel_r2": _mean(corners, "kernel_r2"), "corners": corners}}


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    return float(np.mean([row[key] for row in rows])) if rows else None
