"""``manifest.json``: what a split holds and how it was made (docs/dataset-card.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from ident3d.errors import DatasetError
from ident3d.readers import open_image, read_json_and_bytes
from ident3d.variants import Variant, get_variant, manifest_fields

MANIFEST_FORMAT = 1


def factor_table(variant: Variant) -> list[dict[str, Any]]:
    """One row per latent: index, name, group, scene quantity, unit, description, raw range."""
    return [{"index": f.index, "name": f.name, "group": f.group, "scene_quantity": f.scene_quantity,
             "unit": f.unit, "description": f.description, "low": f.low, "high": f.high,
             **({"classes": list(f.classes)} if f.is_class else {})}
            for f in variant.factors]


def build_manifest(*, variant: str | Variant, n: int, padding: int, renderer: dict[str, Any],
                   settings: dict[str, Any], seeds: dict[str, Any], latents_sha256: str,
                   files: dict[str, str], image_mean: list[float], image_std: list[float],
                   pairs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of a rendered split; ``pairs`` only for a paired split (images 2i, 2i + 1)."""
    variant = get_variant(variant)
    return {
        "format_version": MANIFEST_FORMAT,
        "dataset": "3dident",
        **manifest_fields(variant),
        "factors": factor_table(variant),
        "n": n,
        "padding": padding,
        "renderer": renderer,
        "render_settings": settings,
        "seeds": seeds,
        "raw_latents_sha256": latents_sha256,
        "image_mean": image_mean,
        "image_std": image_std,
        "files": files,
        **({"pairs": pairs} if pairs else {}),
    }


def read_manifest(path: Path) -> dict[str, Any]:
    return read_manifest_and_sha256(path)[0]


def read_manifest_and_sha256(path: Path) -> tuple[dict[str, Any], str]:
    """The manifest and the sha256 of the bytes it was parsed from (what a result records)."""
    manifest, raw = read_json_and_bytes(path, DatasetError, "restore it, or re-create the split")
    if not isinstance(manifest, dict):
        raise DatasetError(f"{path}: not a manifest (a JSON object). Fix: restore it, or re-create "
                           "the split.")
    if manifest.get("format_version") != MANIFEST_FORMAT:
        raise DatasetError(f"{path}: manifest format {manifest.get('format_version')!r}, this "
                           f"version of ident3d reads format {MANIFEST_FORMAT}. Fix: upgrade ident3d.")
    return manifest, hashlib.sha256(raw).hexdigest()


MAX_IMAGE_SIDE = 4096  # the largest image side accepted where a manifest names no resolution


def manifest_resolution(manifest: dict[str, Any] | None) -> int | None:
    """The side in pixels every image of the split has: the render setting, else the packed array's."""
    if not manifest:
        return None
    for value in ((manifest.get("render_settings") or {}).get("resolution"),
                  ((manifest.get("packed") or {}).get("shape") or [None, None])[1]):
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_IMAGE_SIDE:
            return value
    return None


def image_size_problem(path: Path, size: tuple[int, int], resolution: int | None) -> str | None:
    """Why an image of ``size`` (width, height, from its header) cannot belong to a split of
    ``resolution`` px (or of any size up to MAX_IMAGE_SIDE when unknown); decoding it is not needed."""
    if resolution is not None and size != (resolution, resolution):
        return f"{path}: {size[0]} x {size[1]} px, the split's images are {resolution} x {resolution}"
    if max(size) > MAX_IMAGE_SIDE:
        return f"{path}: {size[0]} x {size[1]} px, larger than any split's images ({MAX_IMAGE_SIDE} px)"
    return None


def channel_stats(images: Iterable[Path | np.ndarray]) -> tuple[list[float], list[float]]:
    """Per-channel mean and std of RGB images in [0, 1] units, over every pixel of every image; each
    image a file (decoded here) or an image already decoded, uint8 (H, W, 3)."""
    total = np.zeros(3)
    total_sq = np.zeros(3)
    count = 0
    for image in images:
        pixels = (image if isinstance(image, np.ndarray) else _decoded(image)).reshape(-1, 3) / 255.0
        total += pixels.sum(0)
        total_sq += (pixels**2).sum(0)
        count += len(pixels)
    if count == 0:
        return [0.0] * 3, [0.0] * 3
    mean = total / count
    std = np.sqrt(np.maximum(total_sq / count - mean**2, 0.0))
    return [round(float(v), 6) for v in mean], [round(float(v), 6) for v in std]


def _decoded(path: Path) -> np.ndarray:
    try:
        with open_image(path) as im:
            wrong = image_size_problem(path, im.size, None)  # the header, before decoding
            if wrong:
                raise DatasetError(f"{wrong}. Fix: re-render or re-download it.")
            return np.asarray(im.convert("RGB"))
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as error:
        raise DatasetError(f"{path} cannot be decoded ({error}). Fix: re-render or re-download "
                           "it (`ident3d audit --data ROOT --repair` for a rendered split).") from None
