"""Regions of the latent space, for out-of-distribution tracks: what a training split leaves out and
what an OOD test split holds.

A region is a box on raw latents: a closed interval ``[low, high]`` within [-1, 1] for each of some
named continuous factors, and every value for the others. In ``tracks.toml`` a track names its
regions (``regions.extrapolation = { object_y = [0.6, 1.0] }``) and a split either draws only inside
one (``region = "extrapolation"``) or never inside any of a list (``exclude = [...]``).

Sampling is exact, not a subsample of rendered images: raw latents are drawn from the variant
(``Variant.sample``) in seeded chunks and kept when they meet the split's condition, so only the
kept latents are rendered, each distributed as the variant's marginal restricted to the condition.
The chunks' seeds are ``[seed, REGION_STREAM, chunk]``: the same track gives the same latents on
every machine (the track's ``latents_sha256`` proves it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ident3d.errors import LatentError
from ident3d.latents import RAW_HIGH, RAW_LOW
from ident3d.variants.model import Variant

REGION_STREAM = 7  # second key of the chunks' seeds: apart from the variant's other streams
MIN_CHUNK = 4096
MAX_CHUNKS = 1000  # a condition that keeps almost nothing stops here instead of drawing for ever


@dataclass(frozen=True)
class Region:
    name: str
    bounds: tuple[tuple[str, float, float], ...]  # (factor, low, high), closed

    @classmethod
    def parse(cls, name: str, intervals: Mapping[str, Sequence[float]], variant: Variant) -> Region:
        """A region from its TOML table, every factor and interval checked against ``variant``."""
        where = f"region {name!r}"
        if not isinstance(intervals, Mapping) or not intervals:
            raise LatentError(f"{where}: expected a table of factor = [low, high], got {intervals!r}")
        continuous = [f.name for f in variant.factors if not f.is_class]
        bounds = []
        for factor, interval in intervals.items():
            if factor not in continuous:
                raise LatentError(f"{where}: {factor!r} is not a continuous factor of variant "
                                  f"{variant.name} ({', '.join(continuous)})")
            if (not isinstance(interval, Sequence) or len(interval) != 2
                    or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in interval)
                    or not RAW_LOW <= interval[0] < interval[1] <= RAW_HIGH):
                raise LatentError(f"{where}: {factor} = {interval!r}; expected [low, high] with "
                                  f"{RAW_LOW} <= low < high <= {RAW_HIGH} (raw latent values)")
            bounds.append((factor, float(interval[0]), float(interval[1])))
        return cls(name, tuple(bounds))

    def contains(self, raw: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """A boolean mask: which rows of ``raw`` (N, k) lie inside the region."""
        inside = np.ones(len(raw), dtype=bool)
        for factor, low, high in self.bounds:
            column = raw[:, list(names).index(factor)]
            inside &= (column >= low) & (column <= high)
        return inside

    def describe(self) -> dict[str, list[float]]:
        return {factor: [low, high] for factor, low, high in self.bounds}


def sample_in_regions(variant: Variant, n: int, seed: int, inside: Region | None = None,
                      outside: Sequence[Region] = ()) -> np.ndarray:
    """``n`` raw latents of ``variant`` drawn from its marginal restricted to ``inside`` (when given)
    and to outside every region of ``outside`` (see the module docstring)."""
    if n < 1:
        raise LatentError(f"number of samples must be >= 1, got {n}")
    kept, total = [], 0
    for chunk in range(MAX_CHUNKS):
        raw = variant.sample(max(MIN_CHUNK, 4 * n), [seed, REGION_STREAM, chunk])
        keep = inside.contains(raw, variant.names) if inside else np.ones(len(raw), dtype=bool)
        for region in outside:
            keep &= ~region.contains(raw, variant.names)
        kept.append(raw[keep])
        total += int(keep.sum())
        if total >= n:
            return np.concatenate(kept)[:n]
    condition = ", ".join(([f"inside {inside.name}"] if inside else []) +
                          [f"outside {r.name}" for r in outside])
    raise LatentError(f"{condition}: only {total} of {n} latents in {MAX_CHUNKS} chunks; the condition "
                      "keeps almost nothing. Fix: widen the region's intervals.")


def split_latents(track, split: str, spec=None) -> np.ndarray:
    """The raw latents of a rendered track's split (an ``ident3d.tracks.Track``): the variant's
    ``sample(n, seed)``, or, when the split names a region or regions to exclude, the exact draw of
    ``sample_in_regions``, or, for a content/style split, the rows of ``sample_pairs``. ``spec``
    (the split's ``SplitSpec`` with another ``n`` and ``seed``) draws from the same distribution
    anew: a fresh draw (``ident3d.fresh``)."""
    from ident3d.variants import get_variant

    spec, variant = spec or track.split(split), get_variant(track.variant)
    if spec.pairs:  # content/style pairs (the only pairs a track holds): spec.n images, spec.n / 2 pairs
        return variant.sample_pairs(spec.n // 2, spec.seed, style=spec.pairs["style"])
    if spec.region is None and not spec.exclude:
        return variant.sample(spec.n, spec.seed)
    regions = {name: Region.parse(name, bounds, variant) for name, bounds in track.regions.items()}
    unknown = [name for name in (spec.region, *spec.exclude) if name is not None and name not in regions]
    if unknown:
        raise LatentError(f"track {track.id}, split {split}: no region {unknown[0]!r}; it has "
                          f"{', '.join(regions) or 'none'}. Fix: define it under regions in tracks.toml.")
    return sample_in_regions(variant, spec.n, spec.seed, regions.get(spec.region) if spec.region else None,
                             [regions[name] for name in spec.exclude])
