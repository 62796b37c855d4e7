"""``ident3d audit``: check a split's layout, counts, latents, images and checksums."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from ident3d.atomic import sha256_file
from ident3d.errors import DatasetError, Ident3dError, LatentError
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import image_size_problem, manifest_resolution, read_manifest
from ident3d.readers import open_image, read_array
from ident3d.variants import split_variant

QUICK_SAMPLE = 100


@dataclass
class Report:
    """What ``check_integrity`` found: ``broken`` images can be re-rendered, the rest cannot."""

    checked: int = 0
    problems: list[str] = field(default_factory=list)
    broken: list[int] = field(default_factory=list)
    packed_stale: bool = False


def check_integrity(root, split: str, quick: bool = False) -> Report:
    """Check one split; an empty ``problems`` list means it is sound."""
    lay = SplitLayout(root, split)
    report = Report()
    try:
        raw = read_array(lay.raw_latents, DatasetError, lay.repair_command())
        manifest = read_manifest(lay.manifest) if lay.manifest.exists() else None
        split_variant(manifest).check_raw(raw, what=str(lay.raw_latents))
    except (DatasetError, LatentError) as error:
        report.problems.append(str(error))
        return report
    n = len(raw)
    if lay.latents.exists():
        try:
            if read_array(lay.latents, DatasetError, lay.repair_command(), mmap=True).shape != raw.shape:
                report.problems.append(f"{lay.latents}: shape differs from raw_latents.npy {raw.shape}")
        except DatasetError as error:
            report.problems.append(str(error))
    manifest = None
    if lay.manifest.exists():
        try:
            manifest = read_manifest(lay.manifest)
        except Ident3dError as error:
            report.problems.append(str(error))
    if manifest is None and lay.render_job.exists():
        report.problems.append(f"{lay.manifest}: missing, but {lay.render_job.name} is there: the render "
                               f"did not finish. Fix: re-run the same `ident3d render` command.")
    if manifest and manifest["n"] != n:
        report.problems.append(f"{lay.manifest}: n = {manifest['n']}, raw_latents.npy has {n} rows")
    width = manifest["padding"] if manifest else padding_width(n)
    on_disk = len(list(lay.images.glob("[!.]*.png"))) if lay.images.exists() else 0
    if on_disk != n:
        report.problems.append(f"{lay.images}: {on_disk} PNG files, expected {n}")
    indices = np.arange(n)
    if quick and n > QUICK_SAMPLE:
        indices = np.sort(np.random.default_rng(0).choice(n, QUICK_SAMPLE, replace=False))
    files = manifest.get("files", {}) if manifest else {}
    resolution = manifest_resolution(manifest)
    for i in indices:
        problem = _image_problem(lay.image(int(i), width), files, resolution)
        if problem:
            report.problems.append(problem)
            report.broken.append(int(i))
    report.checked = len(indices)
    packed = manifest.get("packed") if manifest else None
    if packed and not quick:
        if not lay.packed.exists():
            report.problems.append(f"{lay.packed}: listed in the manifest but missing")
            report.packed_stale = True
        elif sha256_file(lay.packed) != packed["sha256"]:
            report.problems.append(f"{lay.packed}: checksum differs from the manifest")
            report.packed_stale = True
    return report


def _image_problem(path, files: dict[str, str], resolution: int | None) -> str | None:
    try:
        with open_image(path) as im:
            wrong = image_size_problem(path, im.size, resolution)  # from the header, before decoding
            if wrong:
                return wrong
            im.convert("RGB").load()
    except FileNotFoundError:
        return f"{path}: missing"
    except (OSError, ValueError, Image.DecompressionBombError) as error:
        return f"{path}: cannot be decoded ({error})"
    if path.name in files and sha256_file(path) != files[path.name]:
        return f"{path}: checksum differs from the manifest"
    return None
