"""``ident3d pack``: all images of a split in one memory-mappable uint8 array, ``images.npy``."""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

from ident3d import atomic
from ident3d.datasets import ThreeDIdent
from ident3d.errors import DatasetError
from ident3d.layout import SplitLayout
from ident3d.manifest import build_manifest, channel_stats, image_size_problem, manifest_resolution
from ident3d.readers import open_image


def published_manifest(dataset: ThreeDIdent) -> dict:
    """A manifest for a split that came without one (the published Zenodo layout)."""
    paths = [dataset.image_path(i) for i in range(len(dataset))]
    mean, std = channel_stats(paths)
    return build_manifest(
        variant="legacy", n=len(dataset), padding=dataset.padding,
        renderer={"name": "published", "source": "Zenodo record 4502485"}, settings={},
        seeds={}, latents_sha256=atomic.sha256_array(dataset.latents),
        files={p.name: atomic.sha256_file(p) for p in paths}, image_mean=mean, image_std=std)


def pack_split(root, split: str = "train", progress: bool = True) -> SplitLayout:
    """Decode every PNG once into ``images.npy`` (N, H, W, 3) and record its checksum.

    A split that is already packed is left alone (``ident3d audit`` checks the packed file).
    """
    dataset = ThreeDIdent(root, split)
    lay = dataset.layout
    if dataset.is_packed:
        return lay
    if lay.packed.exists() or lay.packed.is_symlink():
        raise DatasetError(f"{lay.packed}: exists but the manifest does not list it, so it was not "
                           "written by `ident3d pack` and is not replaced. Fix: move it away, then re-run.")
    resolution = manifest_resolution(dataset.manifest)
    for i in range(len(dataset)):  # every header first: nothing is decoded or written for a bad split
        try:
            with open_image(dataset.image_path(i)) as im:
                size = im.size
        except (OSError, ValueError) as error:
            raise DatasetError(f"{dataset.image_path(i)} cannot be read ({error}). Fix: "
                               f"{lay.repair_command()}") from None
        resolution = resolution or size[0]
        problem = image_size_problem(dataset.image_path(i), size, resolution)
        if problem:
            raise DatasetError(f"{problem}. Fix: {lay.repair_command()}")
    manifest = dataset.manifest or published_manifest(dataset)
    first = dataset.load_array(0)
    shape = (len(dataset), *first.shape)
    with atomic.atomic_path(lay.packed, suffix=".npy") as tmp:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=shape)
        for i in tqdm(range(len(dataset)), unit="img", desc=f"pack {split}", disable=not progress):
            image = dataset.load_array(i)
            if image.shape != first.shape:
                raise DatasetError(f"{dataset.image_path(i)} has shape {image.shape}, expected "
                                   f"{first.shape} like image 0. Fix: re-render that image.")
            out[i] = image
        out.flush()
        del out
        sha = atomic.sha256_file(tmp)
    manifest["packed"] = {"file": lay.packed.name, "shape": list(shape), "dtype": "uint8",
                          "sha256": sha}
    atomic.write_json(lay.manifest, manifest)
    return lay
