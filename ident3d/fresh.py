"""Fresh draws: test images of a track's distribution rendered at scoring time from a seed nobody
knew before, and the memorisation gap between the public split's score and theirs.

A public test split can be memorised: a model that stores its images and answers with their
latents scores perfectly on it and says nothing about generalisation. A fresh draw is ``n`` new
latents of the track's test distribution (its variant, marginal, pairs, and on an OOD track each
region split scored beside it), drawn with a
seed taken from OS entropy when the draw starts, rendered with the track's settings, and scored
by the read-outs the protocol fitted on the public split (``Readout``), beside the public split's
own held-out score rows. The seed is written into the result after scoring, so anyone can render
the same draw again and re-score it. The gap (public minus fresh, per metric) carries a bootstrap
interval: both scored sets are resampled with the read-outs and the matching held fixed.
"""

from __future__ import annotations

import functools
import logging
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from ident3d import gap_test, metrics
from ident3d.errors import DatasetError
from ident3d.protocols import ScoringProtocol, gap_metrics, pair_rows
from ident3d.tracks import Track
from ident3d.tracks.identity import RENDERERS

BOOTSTRAP_DRAWS = 2000

log = logging.getLogger(__name__)


def draw_seed() -> int:
    """A seed from OS entropy: nobody, the model's author included, can know it before the draw."""
    return secrets.randbits(63)


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


def render_draw(track: Track, n: int, seed: int, root: Path, workers: int = 2, split: str = "test",
                stop: threading.Event | None = None) -> Path:
    """Render the draw into ``root/split``: a finished split of ``n`` images of the distribution of the
    track's ``split`` (its test split, or one of an OOD track's region splits). ``stop``, set by
    another thread, ends the render early with a ``RenderError``."""
    render = next((point.load() for point in entry_points(group=RENDERERS, name="blender-draw")), None)
    if render is None:
        raise DatasetError("a fresh draw needs the renderer. Fix: install ident3d from its clone with the "
                           'render extra (pip install -e ".[render]"; README, "Install")')
    return render(track, split, Path(root), n=n, seed=seed, workers=workers, stop=stop)


class BackgroundDraw:
    """A draw rendering in a thread of its own while the caller goes on (the evaluator encodes and
    scores the public split meanwhile, so the render's processes fill the cores that work leaves
    idle): ``n`` images of each of ``splits`` of ``track`` drawn with ``seed``, into a scratch folder
    that lives until ``close``. ``wait`` gives the folder once every split is rendered (or raises
    the render's error); ``close`` stops a render still running (its processes are terminated within
    a fraction of a second) and removes the folder."""

    def __init__(self, track: Track, n: int, seed: int, splits: tuple[str, ...], workers: int) -> None:
        self.track, self.n, self.seed, self.splits, self.workers = track, n, seed, splits, workers
        self.render_s = 0.0  # wall seconds from the start to the last split rendered
        self._scratch = tempfile.TemporaryDirectory(prefix="ident3d-fresh-")
        self.root = Path(self._scratch.name)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._render, name="ident3d-fresh-draw", daemon=True)
        self._thread.start()

    def _render(self) -> None:
        began = time.perf_counter()
        try:
            for split in self.splits:
                render_draw(self.track, self.n, self.seed, self.root, self.workers, split, self._stop)
        except BaseException as error:  # handed to the thread that waits
            self._error = error
        self.render_s = time.perf_counter() - began

    def wait(self) -> Path:
        """The scratch folder holding a finished split per name in ``splits``."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self.root

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._scratch.cleanup()


@dataclass(frozen=True)
class Readout:
    """The public split's read-outs as the protocol fitted them (the affine map on the fit rows, the
    latent-to-feature matching), applied unchanged to any scored set: the public split's own score
    rows, or a fresh draw. Both sets are then held-out images for the same read-out, so their
    difference is what the model's features do on images it may have seen against images it cannot
    have seen, not what a read-out fitted on fewer images does."""

    z_fit: np.ndarray
    h_fit: np.ndarray
    assignment: np.ndarray  # Pearson matching, found by the protocol
    protocol: ScoringProtocol

    @functools.cached_property
    def linear(self) -> metrics.AffineReadout:
        return metrics.AffineReadout.fit(self.h_fit, self.z_fit)

    def per_latent(self, z: np.ndarray, h: np.ndarray) -> dict[str, np.ndarray]:
        """Per-latent values of the gap's metrics for features ``h`` of latents ``z``, as the protocol
        computes them."""
        return self.protocol.gap_values(self.linear, self.assignment, z, h)

    def means(self, per: dict[str, np.ndarray]) -> dict[str, float]:
        """The means as the protocol takes them (R² clipped per latent or after the mean)."""
        return {key: self.protocol.mean(values) for key, values in per.items()}

    def row_statistics(self, z: np.ndarray, h: np.ndarray) -> np.ndarray:
        """The per-row quantities the memorisation test sums (``gap_test``) under these read-outs."""
        matched = np.where(self.assignment >= 0, np.maximum(self.assignment, 0), 0)
        features = h[:, matched] * (self.assignment >= 0)  # an unmatched latent reads a zero feature
        return gap_test.row_statistics(z, self.linear.predict(h), features)

    def resampled(self, z: np.ndarray, h: np.ndarray, draws: int, rng: np.random.Generator,
                  paired: bool = False) -> dict[str, np.ndarray]:
        """Each gap metric's mean over ``draws`` resamples (with replacement) of the scored rows; of
        whole pairs when ``paired`` (rows 2k and 2k + 1 share their content, so they are one draw of
        the distribution, not two: resampled alone, the interval would be too narrow)."""
        if paired:
            rows = pair_rows(rng.integers(0, len(z) // 2, size=(draws, len(z) // 2)))
        else:
            rows = rng.integers(0, len(z), size=(draws, len(z)))
        prediction = self.linear.predict(h)
        clip_each = self.protocol.clips_each_latent
        return {"linear_r2": metrics.bootstrap_r2(z, prediction, rows, clip_each=clip_each),
                "mcc_pearson": metrics.bootstrap_mcc(z, h, self.assignment, rows)}


def memorisation_gap(readout: Readout, public: tuple[np.ndarray, np.ndarray],
                     fresh: tuple[np.ndarray, np.ndarray], seed: int,
                     draws: int = BOOTSTRAP_DRAWS, paired: bool = False) -> dict[str, dict[str, Any]]:
    """Per gap metric: the public score rows' and the fresh draw's scores under the same read-out
    (the protocol's means), the fresh score's 95% interval, the gap (public minus fresh) with its 95%
    percentile-bootstrap interval (how large it is), and the memorisation test's one-sided p-value
    (``ident3d.gap_test``: whether it is larger than chance; ``judge`` adjusts it across a result).
    ``paired``: both sets hold pairs as rows 2k and 2k + 1 (a content/style track; the protocols keep
    a pair's rows together and adjacent), resampled and relabelled by pair."""
    rng = np.random.default_rng([seed, 1])
    on_public = readout.resampled(*public, draws, rng, paired)
    on_fresh = readout.resampled(*fresh, draws, rng, paired)
    public_means = readout.means(readout.per_latent(*public))
    fresh_means = readout.means(readout.per_latent(*fresh))
    tested = gap_test.permutation_p(readout.row_statistics(*public), readout.row_statistics(*fresh),
                                    public[0].shape[1], seed, paired=paired)
    out = {}
    for key in gap_metrics():
        low, high = np.quantile(on_public[key] - on_fresh[key], [0.025, 0.975])
        fresh_low, fresh_high = np.quantile(on_fresh[key], [0.025, 0.975])
        out[key] = {"public": public_means[key], "fresh": fresh_means[key],
                    "fresh_ci95": [float(fresh_low), float(fresh_high)],
                    "gap": public_means[key] - fresh_means[key], "ci95": [float(low), float(high)],
                    **tested[key]}
    return out


def judge(gaps: list[dict[str, dict[str, Any]]]) -> bool:
    """The memorisation flag of a fresh section whose gaps (the test split's, then each region's) are
    ``gaps``: Holm-adjust their p-values together in place (each metric gets ``p_holm`` and
    ``above_chance``) and say whether any is at most ``gap_test.LEVEL``. Its false-alarm rate on splits
    no model saw and its power are measured by ``ident3d.baselines.flag_calibration``
    (docs/submissions.md)."""
    gap_test.adjust(gaps)
    return any(metric["above_chance"] for gap in gaps for metric in gap.values())
