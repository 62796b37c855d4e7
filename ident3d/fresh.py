"""Fresh draws: test images of a track's distribution rendered at scoring time from a seed nobody
knew before, and the memorisation gap between the public split's score and theirs.

A public test split can be memorised: a model that stores its images and answers with their
latents scores perfectly on it and says nothing about generalisation. A fresh draw is ``n`` new
latents of the track's test distribution (its variant, marginal, regions or pairs), drawn with a
seed taken from OS entropy when the draw starts, rendered with the track's settings, and scored
under the same protocol. The seed is written into the result after scoring, so anyone can render
the same draw again and re-score it. The gap (public minus fresh, per metric) carries a bootstrap
interval: the score sets of both are resampled with the read-outs and the matching held fixed.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from ident3d import metrics
from ident3d.errors import DatasetError
from ident3d.tracks import Track
from ident3d.tracks.verification import RENDERERS

GAP_METRICS = ("linear_r2", "mcc_pearson")  # the metrics tables rank by
BOOTSTRAP_DRAWS = 2000

log = logging.getLogger(__name__)


def draw_seed() -> int:
    """A seed from OS entropy: nobody, the model's author included, can know it before the draw."""
    return secrets.randbits(63)


def fresh_splits(track: Track) -> list[str]:
    """The splits a fresh draw renders: ``test`` and, for an OOD track, each OOD region's split."""
    return ["test", *(name for name, spec in track.splits.items() if spec.region is not None)]


def check_drawable(track: Track | None, what: str) -> Track:
    """The track a fresh draw of ``what`` renders, or one error line saying why there is none."""
    if track is None:
        raise DatasetError(f"{what}: not a track's split, so there is no distribution to draw fresh "
                           "test images from. Fix: score a track's split (`ident3d tracks`), or drop "
                           "--fresh.")
    if track.source != "render":
        raise DatasetError(f"{what}: track {track.id} is the published data, rendered by the original "
                           "code at 512 samples (about 16 s per 224 px image on 2 cores), which ident3d "
                           "does not render. Fix: use a rendered track (`ident3d tracks`), or drop --fresh.")
    return track


def render_draw(track: Track, n: int, seed: int, root: Path, workers: int = 2) -> Path:
    """Render the draw into ``root`` (one finished split per name of ``fresh_splits``)."""
    render = next((point.load() for point in entry_points(group=RENDERERS, name="blender-draw")), None)
    if render is None:
        raise DatasetError("a fresh draw needs the renderer. Fix: install ident3d from its clone with the "
                           'render extra (pip install -e ".[render]"; README, "Install")')
    for split in fresh_splits(track):
        render(track, split, Path(root), n=n, seed=seed, workers=workers)
    return Path(root)


@dataclass(frozen=True)
class Scored:
    """What the bootstrap needs of one scored set: latents, standardised features, the protocol's
    fit and score rows, the matching, and the means as the protocol reports them."""

    z: np.ndarray
    h: np.ndarray
    fit: np.ndarray
    test: np.ndarray
    assignment: np.ndarray
    protocol: str
    means: dict[str, float | None]

    def resampled(self, draws: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Each gap metric's mean over ``draws`` resamples of its score set (read-outs held fixed)."""
        prediction = metrics.affine_predict(self.h[self.fit], self.z[self.fit], self.h[self.test])
        r2_rows = rng.integers(0, len(self.test), size=(draws, len(self.test)))
        # cl-ica-2021 matches and scores MCC on its whole sample, ident3d-eval-v1 on the score half
        mcc_set = np.concatenate([self.fit, self.test]) if self.protocol == "cl-ica-2021" else self.test
        mcc_rows = rng.integers(0, len(mcc_set), size=(draws, len(mcc_set)))
        return {"linear_r2": metrics.bootstrap_r2(self.z[self.test], prediction, r2_rows,
                                                  clip_each=self.protocol != "cl-ica-2021"),
                "mcc_pearson": metrics.bootstrap_mcc(self.z[mcc_set], self.h[mcc_set], self.assignment,
                                                     mcc_rows)}


def memorisation_gap(public: Scored, fresh: Scored, seed: int,
                     draws: int = BOOTSTRAP_DRAWS) -> dict[str, dict[str, Any]]:
    """Per gap metric: the fresh score's 95% interval, the gap (public minus fresh) and its 95%
    percentile-bootstrap interval, and whether the public score lies above the fresh one beyond
    that interval (the interval excludes 0 on the positive side)."""
    rng = np.random.default_rng([seed, 1])
    on_public, on_fresh = public.resampled(draws, rng), fresh.resampled(draws, rng)
    out = {}
    for key in GAP_METRICS:
        gap = float(public.means[key] - fresh.means[key])
        low, high = np.quantile(on_public[key] - on_fresh[key], [0.025, 0.975])
        fresh_low, fresh_high = np.quantile(on_fresh[key], [0.025, 0.975])
        out[key] = {"public": public.means[key], "fresh": fresh.means[key],
                    "fresh_ci95": [float(fresh_low), float(fresh_high)],
                    "gap": gap, "ci95": [float(low), float(high)], "above_chance": bool(low > 0)}
    return out
