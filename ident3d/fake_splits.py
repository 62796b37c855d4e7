"""Fake splits without Blender, in the real on-disk layout: for tests, benchmarks and trying the
loaders and the evaluator before anything is rendered (not to be confused with the synthetic
benchmark of the papers' MLP experiments, ``ident3d.baselines.synthetic``).

Two kinds of pixels: ``colours`` (each image a flat colour set by the first three latents, plus
seeded noise; fast) and ``network`` (a fixed random network of all ten latents, upsampled, so every
latent is in principle recoverable from the image).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from ident3d import atomic
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import build_manifest, channel_stats
from ident3d.variants import get_variant

NETWORK_SEED = 1234


def colour_pixels(z: np.ndarray, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = ((z[:, None, None, :3] + 1) * 127.5)
    noise = rng.integers(0, 8, size=(len(z), size, size, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def network_pixels(z: np.ndarray, size: int) -> np.ndarray:
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(NETWORK_SEED)
    net = nn.Sequential(nn.Linear(z.shape[1], 256), nn.Tanh(), nn.Linear(256, 3 * 8 * 8))
    images = []
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) / p.shape[-1] ** 0.5)
        for chunk in torch.from_numpy(z).split(4096):
            low = torch.sigmoid(2 * net(chunk)).view(-1, 3, 8, 8)
            x = nn.functional.interpolate(low, size=size, mode="bilinear", align_corners=False)
            images.append((x * 255).round().byte().permute(0, 2, 3, 1).numpy())
    return np.concatenate(images)


def write_fake_split(root: Path, split: str = "train", n: int = 50, size: int = 16,
                          manifest: bool = True, seed: int = 0, *, pixels: str = "colours",
                          png: bool = True, variant: str = "v2") -> Path:
    """Write ``root/split`` with ``n`` images of ``size`` px and latents of ``variant`` drawn with
    ``seed`` (uniform for v2).

    ``png=False`` writes only the packed ``images.npy`` (no PNG files; needs ``manifest``), which
    is what a large benchmark split wants. Returns the split folder.
    """
    lay = SplitLayout(Path(root), split)
    lay.images.mkdir(parents=True, exist_ok=True)
    z = get_variant(variant).sample(n, seed)
    atomic.save_npy(lay.raw_latents, z)
    atomic.save_npy(lay.latents, z * 3)
    images = colour_pixels(z, size, seed) if pixels == "colours" else network_pixels(z, size)
    width = padding_width(n)
    paths = [lay.image(i, width) for i in range(n)]
    if png:
        for path, image in zip(paths, images, strict=True):
            Image.fromarray(image).save(path)
    else:
        atomic.save_npy(lay.packed, images)
    if not manifest:
        return lay.folder
    if png:
        mean, std = channel_stats(paths)
    else:
        flat = images.reshape(-1, 3) / 255.0
        mean, std = flat.mean(0).round(6).tolist(), flat.std(0).round(6).tolist()
    document = build_manifest(
        variant=variant, n=n, padding=width, renderer={"name": f"ident3d.fake_splits ({pixels})"},
        settings={"resolution": size}, seeds={"latents": seed}, latents_sha256=atomic.sha256_array(z),
        files={p.name: atomic.sha256_file(p) for p in paths} if png else {}, image_mean=mean,
        image_std=std)
    if not png:
        document["packed"] = {"file": lay.packed.name, "shape": list(images.shape), "dtype": "uint8",
                              "sha256": atomic.sha256_file(lay.packed)}
    atomic.write_json(lay.manifest, document)
    return lay.folder
