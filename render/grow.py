"""Grow a rendered split into a new folder: the same draw with more images, the old ones reused.

Latents come from one seeded stream, row by row, so the first ``n`` rows of a draw of ``N > n`` are
the ``n`` rows of the smaller split. A grown split is exactly the split ``ident3d render`` would make
with ``--n N``: the job checks that the smaller split's latents are the first rows of the larger
draw, links (or copies) each of its images whose checksum matches its manifest into the new folder,
and renders only the rest. The smaller split is only read, never written: the new split gets its
own folder, manifest and statistics.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import replace
from pathlib import Path

from ident3d import atomic
from ident3d.errors import RenderError
from ident3d.layout import SplitLayout
from ident3d.manifest import read_manifest
from ident3d.render.job import RenderJob, image_is_complete, plan_job, prepare
from ident3d.render.settings import RenderSettings
from ident3d.variants import split_variant

log = logging.getLogger(__name__)


def plan_growth(source: Path, root: Path, split: str, n: int, device: str = "cpu") -> RenderJob:
    """The job that renders the split in ``source`` (a split folder with a manifest) grown to ``n``
    images (``n`` pairs for a paired split) as ``root/split``, with the source's variant, seed and
    render settings.

    Example:
        ```python
        from pathlib import Path
        from ident3d.render.grow import plan_growth, reuse_images
        from ident3d.render.job import render_split

        job = plan_growth(Path("data/small/train"), Path("data/larger"), "train", n=16)
        reuse_images(job, Path("data/small/train"))   # 8 images linked, not rendered
        render_split(job)                             # renders images 8-15
        ```
    """
    source_layout = SplitLayout(Path(source).parent, Path(source).name)
    destination = SplitLayout(Path(root), split)
    if destination.folder.resolve() == source_layout.folder.resolve():
        raise RenderError(f"{source}: a split is grown into a new folder, never in place (commands may be "
                          "reading it). Fix: choose another --data or --split for the grown split.")
    manifest = _source_manifest(source_layout)
    pairs = manifest.get("pairs")
    have = manifest["n"] // 2 if pairs else manifest["n"]
    unit = "pairs" if pairs else "images"
    if n <= have:
        raise RenderError(f"--n {n}: {source} already holds {have} {unit}; growing needs more. Fix: "
                          f"pass --n larger than {have}.")
    settings = replace(RenderSettings(**manifest["render_settings"]), device=device)
    job = plan_job(root, split, n=n, seed=manifest["seeds"]["latents"], variant=split_variant(manifest),
                   settings=settings, pairs=pairs)
    if atomic.sha256_array(job.raw[:manifest["n"]]) != manifest["raw_latents_sha256"]:
        raise RenderError(f"{source}: its latents are not the first rows of a larger draw with seed "
                          f"{manifest['seeds']['latents']} (a split of an OOD region, or drawn "
                          "with another numpy), so it cannot be grown. Fix: render a new split of the size "
                          "you need with `ident3d render`.")
    return job


def _source_manifest(layout: SplitLayout) -> dict:
    if not layout.manifest.exists():
        raise RenderError(f"{layout.folder}: no manifest.json, so it is not a finished split. Fix: "
                          "pass a split folder such as data/preview/train, or finish its render first.")
    manifest = read_manifest(layout.manifest)
    renderer, seeds = manifest.get("renderer"), manifest.get("seeds")
    if not isinstance(renderer, dict) or renderer.get("name") != "ident3d.render":
        raise RenderError(f"{layout.folder} was not rendered by ident3d, so it cannot be grown. Fix: "
                          "render a new split of the size you need with `ident3d render`.")
    if not _well_formed(manifest):
        raise RenderError(f"{layout.manifest}: n, padding, seeds, render_settings, files or "
                          "raw_latents_sha256 is missing or of the wrong type. Fix: restore the manifest, "
                          "or render a new split of the size you need.")
    if seeds["latents"] is None:
        raise RenderError(f"{layout.folder} was rendered from a --latents file, not a seed, so there is "
                          "no larger draw to grow it into. Fix: render the extra rows from their own "
                          "latents file into a new split.")
    return manifest


def _well_formed(manifest: dict) -> bool:
    """The fields growing reads, each of the type a render writes (a crafted manifest gets one line)."""
    def whole(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    seeds, settings = manifest.get("seeds"), manifest.get("render_settings")
    if not (whole(manifest.get("n")) and whole(manifest.get("padding")) and isinstance(seeds, dict)
            and (seeds.get("latents") is None or whole(seeds.get("latents"))) and isinstance(settings, dict)
            and isinstance(manifest.get("files"), dict)
            and isinstance(manifest.get("raw_latents_sha256"), str)
            and isinstance(manifest.get("pairs", {}), dict)):
        return False
    try:
        RenderSettings(**settings)
    except (TypeError, RenderError):
        return False
    return True


def reuse_images(job: RenderJob, source: Path) -> int:
    """Link (or copy, across file systems) every image of ``source`` whose checksum matches its
    manifest into ``job``'s split; returns how many. An image that does not match is left for the
    render, with a warning, so a damaged source never reaches the grown split."""
    source_layout = SplitLayout(Path(source).parent, Path(source).name)
    manifest = read_manifest(source_layout.manifest)
    prepare(job)
    reused, damaged = 0, []
    for i in range(manifest["n"]):
        target = job.layout.image(i, job.padding)
        if image_is_complete(target):
            continue
        origin = source_layout.image(i, manifest["padding"])
        if not origin.is_file() or atomic.sha256_file(origin) != manifest["files"].get(origin.name):
            damaged.append(origin.name)
            continue
        _link_or_copy(origin, target)
        reused += 1
    if damaged:
        log.warning("%d image(s) of %s differ from its manifest (first: %s); rendering them anew. "
                    "To fix the source, %s.", len(damaged), source_layout.folder, damaged[0],
                    source_layout.repair_command())
    return reused


def _link_or_copy(origin: Path, target: Path) -> None:
    """A hard link, or a copy when the two folders are on different file systems; either appears
    under its final name at once (renders replace files by rename, so a link is never written
    through)."""
    # a name of this process (shards may grow side by side); finalize drops leftovers (.*.tmp.png)
    temporary = target.with_name(f".{target.stem}.{os.getpid()}.grow.tmp.png")
    try:
        os.link(origin, temporary)
    except OSError:
        shutil.copyfile(origin, temporary)
    os.replace(temporary, target)
