"""Benchmark tracks: named, versioned test data, so that any two results can be compared.

The tracks are data (``ident3d/tracks.toml``). A split *is* a track's split only when it verifies:
for a rendered track, the latents are bit-identical (sha256), the variant and every pixel setting
are equal and the pixel fingerprint is within the track's tolerance; for the published track,
``ident3d download`` fetched it from the pinned Zenodo archive and its latents are still that
archive's. Every other split is ``custom:<hash>``: a hash of its latents, variant and pixel settings,
so results on equal data share a key and results on different data never do (docs/tracks.md).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

import numpy as np

from ident3d.atomic import sha256_array
from ident3d.errors import DatasetError, Ident3dError
from ident3d.layout import SplitLayout
from ident3d.manifest import channel_stats, read_manifest
from ident3d.readers import read_array

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
    render_s_per_image: float | None = None
    bytes_per_image: int | None = None

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

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
    for name, spec in document["tracks"].items():
        splits = {k: SplitSpec(**v) for k, v in spec.pop("splits").items()}
        out[name] = Track(name=name, splits=splits, protocols=tuple(spec.pop("protocols")), **spec)
    return out


def get_track(name: str) -> Track:
    """A track by ``NAME`` or ``NAME@VERSION``."""
    base, _, version = name.partition("@")
    track = tracks().get(base)
    if track is None or (version and version != str(track.version)):
        known = ", ".join(t.id for t in tracks().values())
        raise TrackError(f"unknown track {name!r}; known: {known}. Fix: run `ident3d tracks`.")
    return track


def custom_key(latents: np.ndarray, manifest: dict[str, Any] | None) -> str:
    """``custom:`` and 12 hex digits of the latents, variant and pixel settings."""
    settings = dict((manifest or {}).get("render_settings") or {})
    settings.pop("device", None)
    identity = {"latents": sha256_array(np.ascontiguousarray(latents, dtype=np.float32)),
                "variant": (manifest or {}).get("variant"), "settings": settings}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return f"custom:{digest[:12]}"


def fingerprint(layout: SplitLayout, images: int, padding: int) -> tuple[list[float], list[float]]:
    """Per-channel mean and std of the first ``images`` images of a split."""
    paths = [layout.image(i, padding) for i in range(images)]
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise DatasetError(f"{missing[0]}: missing, so the pixel fingerprint cannot be computed. "
                           f"Fix: {layout.repair_command()}")
    return channel_stats(paths)


def differences(track: Track, layout: SplitLayout) -> list[str]:
    """Everything that keeps ``layout`` from being ``track``'s split of that name; [] = verified."""
    spec = track.split(layout.split)
    try:
        latents = read_array(layout.raw_latents, DatasetError, layout.repair_command())
    except DatasetError as error:
        return [str(error)]
    if track.source == "download":
        return _download_differences(track, spec, layout, latents)
    found = []
    if len(latents) != spec.n:
        found.append(f"size: {len(latents)} images, the track has {spec.n}")
    sha = sha256_array(np.ascontiguousarray(latents))
    if sha != spec.latents_sha256:
        found.append(f"latents: sha256 {sha[:12]}..., the track's are {spec.latents_sha256[:12]}... "
                     f"(uniform, seed {spec.seed}, n {spec.n})")
    if not layout.manifest.exists():
        return [*found, f"{layout.manifest}: missing, so variant and render settings are unknown"]
    manifest = read_manifest(layout.manifest)
    if manifest.get("variant") != track.variant:
        found.append(f"variant: {manifest.get('variant')!r}, the track's is {track.variant!r}")
    settings = dict(manifest.get("render_settings") or {})
    settings.pop("device", None)
    for key, want in track.pixel_settings().items():
        if settings.get(key) != want:
            found.append(f"render setting {key}: {settings.get(key)!r}, the track's is {want!r}")
    if found:
        return found
    return _fingerprint_differences(track, layout, manifest["padding"])


def _fingerprint_differences(track: Track, layout: SplitLayout, padding: int) -> list[str]:
    print_ = track.fingerprint
    if not print_.get("mean"):
        return []
    mean, std = fingerprint(layout, print_["images"], padding)
    worst = float(np.max(np.abs(np.r_[mean, std] - np.r_[print_["mean"], print_["std"]])))
    if worst > print_["tolerance"]:
        return [f"pixels: the first {print_['images']} images differ from the track's fingerprint by "
                f"{worst:.4f} (tolerance {print_['tolerance']}); mean RGB {np.round(mean, 4).tolist()}, "
                f"the track's {print_['mean']}"]
    return []


def _download_differences(track: Track, spec: SplitSpec, layout: SplitLayout,
                          latents: np.ndarray) -> list[str]:
    from ident3d.atomic import sha256_file
    from ident3d.readers import read_json

    if not layout.download_record.exists():
        return [f"{layout.folder}: not fetched by `ident3d download` (no {layout.download_record.name}), "
                f"so it cannot be shown to be the published data"]
    try:
        record = read_json(layout.download_record, DatasetError, layout.repair_command())
        md5, want = record["md5"], record["files"]["raw_latents.npy"]
    except (DatasetError, KeyError, TypeError) as error:
        return [f"{layout.download_record}: not a download record ({error})"]
    found = []
    if md5 != spec.md5:
        found.append(f"archive: MD5 {md5}, the published {spec.archive} has {spec.md5}")
    if sha256_file(layout.raw_latents) != want:
        found.append(f"{layout.raw_latents}: changed since it was downloaded")
    if len(latents) != spec.n:
        found.append(f"size: {len(latents)} images, the published split has {spec.n}")
    return found


def identify(layout: SplitLayout, latents: np.ndarray, manifest: dict[str, Any] | None) -> str:
    """The id of the track this split verifiably is, else its custom key."""
    for track in tracks().values():
        spec = track.splits.get(layout.split)
        if spec is None or spec.n != len(latents):
            continue
        if track.source == "render" and sha256_array(np.ascontiguousarray(latents)) != spec.latents_sha256:
            continue
        if not differences(track, layout):
            return track.id
    return custom_key(latents, manifest)
