"""Is this split a track's split? Identification reads only the split's content (docs/tracks.md):
latents, variant spec, pixel settings, fingerprint and a random sample re-rendered now for a
rendered track; a content hash over every file for the published one. Any other split is
``custom:<hash>``."""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from ident3d import atomic
from ident3d.atomic import sha256_array
from ident3d.errors import DatasetError, Ident3dError, LatentError
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import channel_stats, read_manifest
from ident3d.readers import open_image, open_regular, read_array
from ident3d.tracks import registry
from ident3d.tracks.registry import SplitSpec, Track
from ident3d.variants import Variant, get_variant, split_variant

RENDERERS = "ident3d.renderers"  # entry point group: render/ offers the Blender re-render
if TYPE_CHECKING:
    from ident3d.datasets import ImageReads

QUICK_RECHECK_IMAGES = 4  # images `audit --quick` re-renders (the full check: the track's recheck.images)


def custom_key(latents: np.ndarray, manifest: dict[str, Any] | None) -> str:
    """``custom:`` and 12 hex digits of the latents, variant and pixel settings."""
    settings = dict((manifest or {}).get("render_settings") or {})
    settings.pop("device", None)
    identity = {"latents": sha256_array(np.ascontiguousarray(latents, dtype=np.float32)),
                "variant": (manifest or {}).get("variant"), "settings": settings}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return f"custom:{digest[:12]}"


def fingerprint(layout: SplitLayout, images: int, padding: int, seen: ImageReads | None = None
                ) -> tuple[list[float], list[float]]:
    """Per-channel mean and std of the first ``images`` images of a split (those ``seen`` kept are
    not read again)."""
    kept = seen.images if seen is not None else {}
    paths = [layout.image(i, padding) for i in range(images) if i not in kept]
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise DatasetError(f"{missing[0]}: missing, so the pixel fingerprint cannot be computed. "
                           f"Fix: {layout.repair_command()}")
    return channel_stats(kept[i] if i in kept else layout.image(i, padding) for i in range(images))


def differences(track: Track, layout: SplitLayout, *, quick: bool = False, full: bool = False,
                read: tuple[np.ndarray, dict[str, Any] | None] | None = None,
                seen: ImageReads | None = None) -> list[str]:
    """Everything that keeps ``layout`` from being ``track``'s split of that name; [] = verified.
    ``read`` is the split's raw latents and manifest when the caller has read them (``identify``);
    otherwise they are read here. ``seen``: what the caller's encoding read of the image files (their
    bytes' sha256 and the images it kept), which the fingerprint and the content hash use instead of
    reading a file again.

    The track's sample (``recheck.images``, sized so that a split with 1% of its images altered
    fails with probability at least 99.9%) is re-rendered once per content: a split whose every
    byte passed it before on this machine (``identity_proof``) skips it. ``quick`` re-renders
    a handful of images instead; ``full`` re-renders every image."""
    spec = track.split(layout.split)
    try:
        latents = read[0] if read else read_array(layout.raw_latents, DatasetError, layout.repair_command())
    except DatasetError as error:
        return [str(error)]
    if track.source == "download":
        return _published_differences(spec, layout)
    found = []
    if len(latents) != spec.n:
        found.append(f"size: {len(latents)} images, the track has {spec.n}")
    sha = sha256_array(np.ascontiguousarray(latents))
    if sha != spec.latents_sha256:
        found.append(f"latents: sha256 {sha[:12]}..., the track's are {spec.latents_sha256[:12]}... "
                     f"(uniform, seed {spec.seed}, n {spec.n})")
    try:
        manifest = read[1] if read else read_manifest(layout.manifest) if layout.manifest.exists() else None
        if manifest is None:
            return [*found, f"{layout.manifest}: missing, so variant and render settings are unknown"]
        variant = split_variant(manifest)
    except (DatasetError, LatentError) as error:
        return [*found, str(error)]
    want = get_variant(track.variant)
    if spec_sha256(variant) != spec_sha256(want):
        same_name = " (a different spec under the same name)" if variant.name == want.name else ""
        found.append(f"variant: {variant.name!r}{same_name}, the track's is the built-in {want.name!r} "
                     f"(spec sha256 {spec_sha256(want)[:12]}...)")
    settings = dict(manifest.get("render_settings") or {})
    settings.pop("device", None)
    for key, value in track.pixel_settings().items():
        if settings.get(key) != value:
            found.append(f"render setting {key}: {settings.get(key)!r}, the track's is {value!r}")
    if spec.pairs and manifest.get("pairs") != spec.pairs:  # what the evaluator's block scores read
        found.append(f"pairs: the manifest says {manifest.get('pairs')!r}, the track's are {spec.pairs!r}")
    if found:
        return found
    padding = manifest.get("padding")
    if not isinstance(padding, int) or isinstance(padding, bool) or padding != padding_width(spec.n):
        return [f"{layout.manifest}: padding {padding!r}, the track's images are named with "
                f"{padding_width(spec.n)} digits"]
    found = _fingerprint_differences(track, layout, padding, seen)
    if found:
        return found
    if quick:
        return (_rerender_differences(track, layout, latents, padding, QUICK_RECHECK_IMAGES)
                or _packed_differences(layout, manifest, padding, spec.n))
    try:
        proof = identity_proof(track, layout, spec.n, seen)
    except OSError as error:
        return [f"content: {getattr(error, 'filename', None) or layout.folder}: {error.strerror or error}"]
    if proof.exists() and not full:
        return []
    found = (_rerender_differences(track, layout, latents, padding,
                                   len(latents) if full else track.recheck.get("images", 0))
             or _packed_differences(layout, manifest, padding, spec.n))
    if not found:
        checked = "every image" if full else "a random sample"
        atomic.write_bytes(proof, f"{track.id} {layout.split}: {checked} re-rendered\n".encode())
    return found


def identity_proof(track: Track, layout: SplitLayout, n: int, seen: ImageReads | None = None) -> Path:
    """Where this machine records that a split with exactly this content (every file's bytes, the
    manifest's too) passed the track's re-render check: the user's cache folder, never the split,
    so nobody who hands over a split can write the proof into it."""
    read = (layout.packed,) if _reads_packed(layout) else ()  # the pixels the loaders read, when packed
    digest = content_sha256(layout, n, extra=(layout.manifest, *read),
                            known=seen.digests if seen is not None else None)
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return home / "ident3d" / "proven-splits" / f"{track.id}-{layout.split}-{digest}"


def _reads_packed(layout: SplitLayout, manifest: dict[str, Any] | None = None) -> bool:
    """Whether the loaders read this split's images from images.npy (``ThreeDIdent.is_packed``)."""
    if manifest is None:
        manifest = read_manifest(layout.manifest) if layout.manifest.exists() else None
    return bool(manifest and "packed" in manifest and layout.packed.exists())


def _packed_differences(layout: SplitLayout, manifest: dict[str, Any], padding: int, n: int) -> list[str]:
    """A packed split is read from images.npy, not from the image files the re-render check proved:
    every row must be its image file's pixels exactly."""
    if not _reads_packed(layout, manifest):
        return []
    try:
        packed = read_array(layout.packed, DatasetError, "pack the split again (ident3d pack)", mmap=True)
    except DatasetError as error:
        return [str(error)]
    if packed.dtype != np.uint8 or packed.ndim != 4 or len(packed) != n:
        return [f"{layout.packed}: shape {packed.shape} {packed.dtype}, not the split's {n} images"]
    for index in range(n):
        path = layout.image(index, padding)
        try:
            with open_image(path) as im:
                pixels = np.asarray(im.convert("RGB"))
        except (OSError, ValueError, Image.DecompressionBombError) as error:
            return [f"pixels: {path.name} cannot be decoded ({error})"]
        if pixels.shape != packed.shape[1:] or not np.array_equal(pixels, packed[index]):
            return [f"{layout.packed}: row {index} is not the pixels of {path.name}, and the loaders read "
                    "the packed array: it is not the track's images. Fix: pack the split again (ident3d "
                    "pack), or delete images.npy and its manifest entry to read the image files"]
    return []


def spec_sha256(variant: Variant) -> str:
    """A variant's content hash: its resolved spec as canonical JSON (the name alone proves nothing)."""
    return hashlib.sha256(json.dumps(variant.to_dict(), sort_keys=True).encode()).hexdigest()


def _fingerprint_differences(track: Track, layout: SplitLayout, padding: int,
                             seen: ImageReads | None = None) -> list[str]:
    print_ = track.fingerprint
    if not print_.get("mean"):
        return []
    try:
        mean, std = fingerprint(layout, print_["images"], padding, seen)
    except DatasetError as error:
        return [str(error)]
    worst = float(np.max(np.abs(np.r_[mean, std] - np.r_[print_["mean"], print_["std"]])))
    if worst > print_["tolerance"]:
        return [f"pixels: the first {print_['images']} images differ from the track's fingerprint by "
                f"{worst:.4f} (tolerance {print_['tolerance']}); mean RGB {np.round(mean, 4).tolist()}, "
                f"the track's {print_['mean']}"]
    return []


def _rerender_differences(track: Track, layout: SplitLayout, latents: np.ndarray, padding: int,
                          count: int) -> list[str]:
    """Re-render ``count`` images drawn at random now (fresh entropy, so nobody can know which) and
    compare each with the split's file: mean absolute difference within the track's tolerance."""
    if count <= 0:
        return []
    picks = np.sort(np.random.default_rng().choice(len(latents), size=min(count, len(latents)),
                                                   replace=False))
    tolerance = track.recheck["tolerance"]
    render = next((point.load() for point in entry_points(group=RENDERERS, name="blender")), None)
    if render is None:
        return ["pixels: no renderer is installed to re-render a sample with. Fix: install ident3d from "
                'its clone with the render extra (pip install -e ".[render]"; README, "Install")']
    with tempfile.TemporaryDirectory(prefix="ident3d-recheck-") as scratch:
        try:
            fresh = render(track, latents[picks], Path(scratch), workers=min(2, len(picks)))
        except Ident3dError as error:  # no bpy (the render extra), a broken Blender
            return [f"pixels: cannot re-render a sample to compare with ({error}). Fix: pip install "
                    "'ident3d[render]'"]
        worst = (0.0, "")
        for index, path in zip(picks, fresh, strict=True):
            name = layout.image(int(index), padding).name
            try:
                with open_image(layout.image(int(index), padding)) as im:
                    mine = np.asarray(im.convert("RGB"), dtype=np.float64)
            except (OSError, ValueError, Image.DecompressionBombError) as error:
                return [f"pixels: {name} cannot be decoded ({error})"]
            with open_image(path) as im:
                made = np.asarray(im.convert("RGB"), dtype=np.float64)
            gap = float(np.abs(mine - made).mean()) if mine.shape == made.shape else math.inf
            worst = max(worst, (gap, name))
    if worst[0] > tolerance:
        return [f"pixels: {worst[1]} differs from a fresh render of its latents by {worst[0]:.2f} grey "
                f"levels on average (tolerance {tolerance}; {len(picks)} images drawn at random and "
                "re-rendered): these are not the track's images"]
    return []


def content_sha256(layout: SplitLayout, n: int, extra: tuple[Path, ...] = (),
                   known: dict[int, str] | None = None) -> str:
    """One hash over a split's latents and every image file, in index order (names and bytes), and
    over the ``extra`` files after them. ``known``: image index -> the sha256 of its bytes, as read
    already (``ImageReads``); those files are not read again."""
    known = known or {}
    h = hashlib.sha256()
    images = [(layout.image(i, padding_width(n)), known.get(i)) for i in range(n)]
    for path, digest in [(layout.raw_latents, None), (layout.latents, None), *images,
                         *((path, None) for path in extra)]:
        if digest is None:
            with open_regular(path) as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        h.update(f"{path.relative_to(layout.folder)}\t{digest}\n".encode())
    return h.hexdigest()


def _published_differences(spec: SplitSpec, layout: SplitLayout) -> list[str]:
    """The published split is identified by the content hash this package pins, computed here from
    the files (the download record is a convenience, never evidence)."""
    try:
        digest = content_sha256(layout, spec.n)
    except OSError as error:
        return [f"content: {getattr(error, 'filename', None) or layout.folder}: "
                f"{error.strerror or error} (the published split has {spec.n} images)"]
    if spec.content_sha256 is None:
        return [f"content: this version of ident3d pins no content hash for the published "
                f"{layout.split} split (it was never downloaded on a machine with access to Zenodo), so "
                f"no split can be shown to be it; this split's is {digest} (docs/tracks.md)"]
    if digest != spec.content_sha256:
        return [f"content: sha256 {digest[:12]}... over the latents and images, the published split's "
                f"is {spec.content_sha256[:12]}..."]
    return []


def latent_matches(layout: SplitLayout, latents: np.ndarray) -> list[Track]:
    """The tracks this split could be, from its latents alone (no image is read): a rendered track's
    split of this name with exactly these latents, or a published split of this size that can be
    proven. ``identify`` proves which, if any."""
    found = []
    for track in registry.tracks().values():
        spec = track.splits.get(layout.split)
        if spec is None or spec.n != len(latents):
            continue
        if track.source == "render" and sha256_array(np.ascontiguousarray(latents)) != spec.latents_sha256:
            continue
        if track.source == "download" and spec.content_sha256 is None:
            continue  # nothing to prove it against (see _published_differences)
        found.append(track)
    return found


def identify(layout: SplitLayout, latents: np.ndarray, manifest: dict[str, Any] | None,
             seen: ImageReads | None = None) -> str:
    """The id of the track this split verifiably is, else its custom key. ``latents`` and
    ``manifest`` are what the caller read of the split (``ThreeDIdent``), ``seen`` what it read of the
    image files (``ThreeDIdent.remember_reads``): none of it is read again."""
    for track in latent_matches(layout, latents):
        if not differences(track, layout, read=(latents, manifest), seen=seen):
            return track.id
    return custom_key(latents, manifest)
