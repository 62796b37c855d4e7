"""``ident3d publish``: a split (or a track's splits) as a bundle a data hub reads.

The bundle folder holds ``data/<split>-KKKKK-of-NNNNN.parquet`` (the ``ident3d export`` shards, their
manifests in ``data/__ident3d__/``), ``croissant.json`` (Croissant 1.1 with the responsible-AI
fields), ``README.md`` (the Hugging Face dataset card) and ``DATASHEET.md``. All three documents are
written from one ``BundleFacts``. The bundle is assembled in a hidden folder beside ``out`` and moved
into place only when complete; an ``out`` that holds anything is refused.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import tempfile
from pathlib import Path

from ident3d import atomic
from ident3d.errors import DatasetError
from ident3d.layout import splits_under
from ident3d.publish.croissant import croissant
from ident3d.publish.datasheet import datasheet
from ident3d.publish.facts import BundleFacts, SplitFacts, renderer_text, shard_facts
from ident3d.publish.hub_card import hub_card
from ident3d.tracks import Track, custom_key, differences

CROISSANT = "croissant.json"
CARD = "README.md"
DATASHEET = "DATASHEET.md"
DATA = "data"


def _check_same_kind(datasets: list, root: Path) -> None:
    first = datasets[0]
    for other in datasets[1:]:
        if (other.variant_spec.names, other.resolution, other.variant) != \
                (first.variant_spec.names, first.resolution, first.variant):
            raise DatasetError(f"{root}: splits {first.split!r} and {other.split!r} differ in variant or "
                               "resolution, so they are not one dataset. Fix: publish them separately "
                               "(--split NAME).")


def _check_track(track: Track, dataset) -> None:
    found = differences(track, dataset.layout)
    if found:
        raise DatasetError(f"{dataset.layout.folder}: not the {dataset.split} split of track {track.id} "
                           f"({found[0]}). Fix: publish without --track, or render the track's split "
                           f"(`ident3d render --track {track.name} --split {dataset.split}`).")


def gather_facts(datasets: list, track: Track | None, bundle: Path,
                 shards: dict[str, list[Path]]) -> BundleFacts:
    first = datasets[0]
    manifest = first.manifest
    splits = tuple(SplitFacts(d.split, len(d), shard_facts(bundle, shards[d.split]),
                              d.manifest["raw_latents_sha256"], dict(d.manifest.get("seeds") or {}))
                   for d in datasets)
    variant = first.variant_spec
    if track is not None:
        name, title, description = track.id, track.title, track.description
    else:
        name = custom_key(first.latents, manifest)
        title = f"{variant.title}, {first.resolution} px"
        description = f"A 3DIdent variant rendered with ident3d: {variant.summary}."
    rendered = bool(manifest.get("renderer"))
    return BundleFacts(name=name, title=title, description=description, variant=variant,
                       resolution=first.resolution or 0, render=dict(manifest.get("render_settings") or {}),
                       renderer=renderer_text(manifest), splits=splits, rendered_by_ident3d=rendered,
                       version=f"{track.version}.0.0" if track is not None else "1.0.0",
                       published=datetime.date.today().isoformat())


def publish(root: Path, out: Path, splits: list[str] | None = None, track: Track | None = None,
            shard_size: int = 10_000) -> BundleFacts:
    """Write the bundle of ``root``'s splits (default: all) into the new or empty folder ``out``."""
    from ident3d.datasets import ThreeDIdent
    from ident3d.exchange import export_split

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DatasetError(f"{out} already holds files. Fix: publish into a new or empty folder.")
    datasets = [ThreeDIdent(root, split) for split in splits_under(root, splits)]
    for dataset in datasets:
        if dataset.manifest is None:
            raise DatasetError(f"{dataset.layout.folder}: no manifest.json, so the bundle could not say how "
                               f"the split was made. Fix: run `ident3d pack --data {root} --split "
                               f"{dataset.split}` first (it writes one).")
        if track is not None:
            _check_track(track, dataset)
    _check_same_kind(datasets, Path(root))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.publishing.", dir=out.parent))
    umask = os.umask(0)  # read, then restored: a bundle is for sharing, so it gets a folder's usual mode
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp makes 0700
    try:
        provisional = gather_facts(datasets, track, staging, {d.split: [] for d in datasets})
        shards = {d.split: export_split(Path(root), d.split, staging / DATA, "parquet", shard_size,
                                        info=provisional.info()) for d in datasets}
        facts = gather_facts(datasets, track, staging, shards)
        atomic.write_bytes(staging / CROISSANT, (json.dumps(croissant(facts), indent=2) + "\n").encode())
        atomic.write_bytes(staging / CARD, hub_card(facts).encode())
        atomic.write_bytes(staging / DATASHEET, datasheet(facts).encode())
        if out.exists():
            out.rmdir()
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return facts


__all__ = ["BundleFacts", "gather_facts", "publish"]
