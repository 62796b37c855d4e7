"""``ident3d verify``: check a split's layout, counts, latents, images and checksums."""

from __future__ import annotations

import numpy as np
from PIL import Image

from ident3d.atomic import sha256_file
from ident3d.errors import Ident3dError, LatentError
from ident3d.latents import check_raw_latents
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import read_manifest

QUICK_SAMPLE = 100


def verify_split(root, split: str, quick: bool = False) -> tuple[int, list[str]]:
    """Return (images checked, problems); an empty list means the split is sound."""
    lay = SplitLayout(root, split)
    if not lay.raw_latents.exists():
        return 0, [f"{lay.raw_latents}: missing (not a 3DIdent split)"]
    problems: list[str] = []
    raw = np.load(lay.raw_latents, allow_pickle=False)
    try:
        check_raw_latents(raw, what=str(lay.raw_latents))
    except LatentError as error:
        problems.append(str(error))
    n = len(raw)
    if lay.latents.exists() and np.load(lay.latents, mmap_mode="r").shape != raw.shape:
        problems.append(f"{lay.latents}: shape differs from raw_latents.npy {raw.shape}")
    manifest = None
    if lay.manifest.exists():
        try:
            manifest = read_manifest(lay.manifest)
        except Ident3dError as error:
            problems.append(str(error))
    if manifest and manifest["n"] != n:
        problems.append(f"{lay.manifest}: n = {manifest['n']}, raw_latents.npy has {n} rows")
    width = manifest["padding"] if manifest else padding_width(n)
    on_disk = len(list(lay.images.glob("[!.]*.png"))) if lay.images.exists() else 0
    if on_disk != n:
        problems.append(f"{lay.images}: {on_disk} PNG files, expected {n}")
    indices = np.arange(n)
    if quick and n > QUICK_SAMPLE:
        indices = np.sort(np.random.default_rng(0).choice(n, QUICK_SAMPLE, replace=False))
    files = manifest.get("files", {}) if manifest else {}
    for i in indices:
        path = lay.image(int(i), width)
        try:
            with Image.open(path) as im:
                im.convert("RGB").load()
        except FileNotFoundError:
            problems.append(f"{path}: missing")
            continue
        except OSError as error:
            problems.append(f"{path}: cannot be decoded ({error})")
            continue
        if path.name in files and sha256_file(path) != files[path.name]:
            problems.append(f"{path}: checksum differs from the manifest")
    packed = manifest.get("packed") if manifest else None
    if packed and not quick:
        if not lay.packed.exists():
            problems.append(f"{lay.packed}: listed in the manifest but missing")
        elif sha256_file(lay.packed) != packed["sha256"]:
            problems.append(f"{lay.packed}: checksum differs from the manifest")
    return len(indices), problems
