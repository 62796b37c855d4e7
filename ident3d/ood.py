"""Rendered out-of-distribution splits: do the read-outs hold on regions the training data never showed?

An OOD track (``ident3d/tracks.toml``, regions in ``ident3d.regions``) leaves regions of the factor
space out of its training and in-distribution test splits and renders one test split inside each.
The read-outs of ``ident3d-eval-v1`` (the affine one and the kernel one, with the (alpha, gamma)
chosen per latent in distribution) are fitted on the in-distribution fit half, as always, and scored
on each OOD split: R² per latent against the latent's variance over the in-distribution score half,
so a region's score reads on the in-distribution scale (see ``ident3d.metrics.Readouts.transfer_r2``), and
the same quantity on the in-distribution score half beside it. Unlike read-out extrapolation
(``ident3d.extrapolation``), the encoder itself never saw these regions: a gap here is the encoder's
and the read-out's together.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ident3d.metrics import Readouts, latent_variance

log = logging.getLogger(__name__)


def _per_latent(readouts: Readouts, z_score, h_score, variance, names) -> list[dict[str, Any]]:
    return [{"factor": name, "linear_r2": linear, "kernel_r2": nonlinear}
            for name, (linear, nonlinear) in zip(names, readouts.transfer_r2(h_score, z_score, variance),
                                                  strict=True)]


def _summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {key: float(np.mean([r[key] for r in rows])) for key in ("linear_r2", "kernel_r2")}


def ood_scores(readouts: Readouts, z_score: np.ndarray, h_score: np.ndarray, names: list[str],
               splits: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """In-distribution and per-OOD-split linear and kernel R² (means and per latent) of the
    in-distribution ``readouts`` (fitted on the fit half); ``(z_score, h_score)`` is the in-distribution
    score set and ``splits`` maps a split's name to its (latents, features)."""
    variance = latent_variance(z_score)
    reference = _per_latent(readouts, z_score, h_score, variance, names)
    out = []
    for split, (z, h) in splits.items():
        rows = _per_latent(readouts, z, h, variance, names)
        out.append({"split": split, "n": len(z), **_summary(rows), "per_latent": rows})
    return {"in_distribution": {**_summary(reference), "per_latent": reference}, "splits": out}


def ood_split_names(data_root: Path, track: Any) -> tuple[str, ...]:
    """The names of ``track``'s OOD (region) splits that have a folder under ``data_root``: those
    ``track_ood_splits`` reads (it warns about the others)."""
    return tuple(name for name, spec in track.splits.items()
                 if spec.region is not None and (Path(data_root) / name).is_dir())


def track_ood_splits(data_root: Path, track_id: str) -> dict[str, Any]:
    """The OOD test splits of the track ``track_id`` found under ``data_root`` (``ThreeDIdent`` by
    name), each recording what it reads (``remember_reads``). Each must have the track's latents for
    that name, or this raises naming it; ``confirm_ood_split`` proves the pixels once the split has
    been encoded, from what the encoding read. A split not rendered yet is left out with a warning;
    a track without OOD splits gives none."""
    from ident3d.datasets import ThreeDIdent
    from ident3d.tracks import TrackError, get_track, latent_matches

    try:
        track = get_track(track_id)
    except TrackError:  # custom data: no OOD splits to look for
        return {}
    found = {}
    present = ood_split_names(data_root, track)
    for name, spec in track.splits.items():
        if spec.region is None:
            continue
        if name not in present:
            log.warning("track %s has the OOD split %s, not under %s: render it (`ident3d render --track %s "
                        "--split %s`) to score it", track.id, name, data_root, track.name, name)
            continue
        split = ThreeDIdent(data_root, name)
        if track not in latent_matches(split.layout, split.latents):
            raise _not_the_split(split, track, data_root)
        split.remember_reads()
        found[name] = split
    return found


def confirm_ood_split(split: Any, track_id: str, data_root: Path) -> None:
    """Raise unless the encoded OOD split ``split`` (from ``track_ood_splits``) verifies as the track's
    split of its name, from the image files its encoding read."""
    from ident3d.tracks import get_track, identify

    track = get_track(track_id)
    if identify(split.layout, split.latents, split.manifest, seen=split.reads) != track.id:
        raise _not_the_split(split, track, data_root)


def _not_the_split(split: Any, track: Any, data_root: Path) -> Exception:
    from ident3d.errors import DatasetError

    return DatasetError(f"{split.layout.folder}: not {track.id}'s split {split.split} (latents or pixels "
                        f"differ; `ident3d audit --data {data_root} --track {track.name} --split "
                        f"{split.split}` says what). Fix: render it with `ident3d render --track "
                        f"{track.name} --split {split.split}`.")
