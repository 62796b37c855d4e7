"""The registry of benchmark tracks: ``ident3d/tracks.toml`` read into ``Track`` objects, looked up by
``NAME`` or ``NAME@VERSION``."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

from ident3d.errors import Ident3dError, did_you_mean

PUBLISHED = "3dident-published"


class TrackError(Ident3dError):
    """An unknown track, or a split that is not the track it is said to be."""


@dataclass(frozen=True)
class SplitSpec:
    n: int
    seed: int | None = None
    latents_sha256: str | None = None
    archive: str | None = None  # published tracks: the archive ``ident3d download`` fetches
    md5: str | None = None
    content_sha256: str | None = None  # published tracks: ``content_sha256`` of the extracted split
    region: str | None = None  # OOD tracks: draw only inside this region of the track (ident3d.regions)
    exclude: tuple[str, ...] = ()  # OOD tracks: never inside these regions
    pairs: dict[str, list[str]] | None = None  # content/style tracks: {"style": names}; n images, n / 2 pairs


@dataclass(frozen=True)
class Track:
    name: str
    version: int
    title: str
    description: str
    variant: str
    resolution: int
    source: str  # "render" or "download"
    protocols: tuple[str, ...]
    splits: dict[str, SplitSpec]
    render: dict[str, Any] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    recheck: dict[str, Any] = field(default_factory=dict)  # images re-rendered at audit, tolerance
    render_s_per_image: float | None = None
    fresh_images: int | None = None  # images a fresh draw renders by default (ident3d.fresh)
    fresh_min: int | None = None  # the smallest fresh draw a verified entry may rest on (ident3d.draw_size)
    bytes_per_image: int | None = None
    regions: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # name -> factor intervals

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def nickname(self) -> str | None:
        """What the docs call the track, from its title's brackets ("CPU track"), or None."""
        found = re.search(r"\(([^)]*track)\)$", self.title)
        return found[1] if found else None

    def pixel_settings(self) -> dict[str, Any]:
        """What a manifest's ``render_settings`` must equal for images of this track."""
        return {**self.render, "resolution": self.resolution}

    def split(self, split: str) -> SplitSpec:
        if split not in self.splits:
            raise TrackError(f"track {self.id} has no split {split!r}; it has "
                             f"{', '.join(self.splits)}. Fix: pass --split {next(iter(self.splits))}.")
        return self.splits[split]


@cache
def tracks() -> dict[str, Track]:
    """Every track by name, from ``ident3d/tracks.toml``."""
    document = tomllib.loads(files("ident3d").joinpath("tracks.toml").read_text())
    out = {}
    for name, fields in document["tracks"].items():
        splits = {k: SplitSpec(**{**v, "exclude": tuple(v.get("exclude", ()))})
                  for k, v in fields.pop("splits").items()}
        out[name] = Track(name=name, splits=splits, protocols=tuple(fields.pop("protocols")), **fields)
    return out


def _plain(text: str) -> str:
    return re.sub(r"[\s_-]+", " ", text.strip().lower())


def get_track(name: str) -> Track:
    """A track by ``NAME`` or ``NAME@VERSION``."""
    base, _, version = name.partition("@")
    track = tracks().get(base)
    if track is None or (version and version != str(track.version)):
        known = [t.id for t in tracks().values()]
        called = {_plain(t.nickname): t for t in tracks().values() if t.nickname}
        nicknamed = called.get(_plain(base))
        hint = (f" Did you mean {nicknamed.id!r} (the {nicknamed.nickname})?" if nicknamed
                else did_you_mean(name, known + [t.name for t in tracks().values()]))
        raise TrackError(f"unknown track {name!r}; known: {', '.join(known)}.{hint} "
                         "Fix: run `ident3d tracks`.")
    return track
