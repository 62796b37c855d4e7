"""A render job: plan it, refuse mixed settings, render what is missing, record shards, finalize.

Every file is written atomically, so re-running the same command after any interruption renders
only what is missing and ends with the same dataset as an uninterrupted run.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from ident3d import atomic
from ident3d.captions import captions
from ident3d.errors import ManifestMismatchError, RenderError
from ident3d.latents import (
    broadcast_scale,
    conditional_distribution,
)
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import build_manifest, channel_stats, read_manifest
from ident3d.readers import read_array, read_json
from ident3d.render import engines
from ident3d.render.settings import RenderSettings, track_settings
from ident3d.variants import Variant, get_variant, manifest_fields, split_variant

log = logging.getLogger(__name__)
PNG_END = b"IEND\xaeB`\x82"


@dataclass(frozen=True)
class RenderJob:
    layout: SplitLayout
    variant: Variant
    settings: RenderSettings
    seed: int
    raw: np.ndarray  # (N, k) float32 raw latents of the variant
    latents_file: str | None = None
    pairs: dict[str, Any] | None = None  # a paired split: how positives were drawn (sample_pairs)
    regions: dict[str, Any] | None = None  # an OOD track's split: its region or excluded regions

    @property
    def n(self) -> int:
        return len(self.raw)

    @property
    def padding(self) -> int:
        return padding_width(self.n)

    def record(self) -> dict[str, Any]:
        """The job record (``render_job.json``): what must agree between runs writing into the same
        split, in JSON's values (a variant spec's tuples as lists), as the file holds it."""
        record = {
            **manifest_fields(self.variant),
            "render_settings": self.settings.pixel_identity(),
            "seed": None if self.latents_file else self.seed,
            "n": self.n,
            "raw_latents_sha256": atomic.sha256_array(self.raw),
            **({"pairs": self.pairs} if self.pairs else {}),
            **({"regions": self.regions} if self.regions else {}),
        }
        return json.loads(json.dumps(record))


def plan_job(root: Path, split: str, *, n: int | None, seed: int, variant: str | Path | Variant,
             settings: RenderSettings, latents_file: Path | None = None,
             pairs: dict[str, Any] | None = None, regions: dict[str, Any] | None = None,
             raw: np.ndarray | None = None) -> RenderJob:
    """Check every input before anything is written: variant, latents shape, range and finiteness.

    The render API is this and ``render_split``: plan a job, then render it (resumable: a second
    call renders only what is missing). Settings come from ``ident3d.render.settings.resolve_settings``.

    Example:
        ```python
        from pathlib import Path
        from ident3d.render.job import plan_job, render_split
        from ident3d.render.settings import resolve_settings

        job = plan_job(Path("data/small"), "train", n=8, seed=0, variant="v2",
                       settings=resolve_settings("preview"))
        manifest = render_split(job, workers=2)   # data/small/train/manifest.json
        ```

    ``pairs`` (``{"conditional": ..., "scale": ..., "beta": ...}``, or ``{"style": [names]}`` for
    content/style pairs) makes a paired split of ``n`` exact positive pairs, ``2n`` images: anchor ``i``
    is image ``2i``, its positive ``2i + 1``.
    ``raw`` (with ``regions``, which the job record keeps) are latents an OOD track's split drew
    (``ident3d.regions.split_latents``)."""
    variant = get_variant(variant)
    if pairs is not None:
        if latents_file is not None:
            raise RenderError("--pairs draws its own latents; --latents cannot be combined with it. "
                              "Fix: drop one of them.")
        if n is None or n < 1:
            raise RenderError(f"--n must be a positive number of pairs, got {n}")
        if pairs.get("style"):  # content/style pairs: no conditional, the style latents are redrawn
            pairs = {"style": list(pairs["style"])}
            raw = variant.sample_pairs(n, seed, style=pairs["style"])
        else:
            pairs = {"conditional": pairs["conditional"], "beta": pairs.get("beta"),
                     "scale": [float(v) for v in broadcast_scale(pairs["scale"], variant.n_latents)]}
            conditional_distribution(pairs["conditional"], pairs["beta"])
            raw = variant.sample_pairs(n, seed, pairs["conditional"], np.array(pairs["scale"]), pairs["beta"])
        return RenderJob(SplitLayout(Path(root), split), variant, settings, seed, raw, None, pairs)
    if latents_file is not None:
        raw = read_array(latents_file, RenderError,
                         f"save an (N, {variant.n_latents}) float array with numpy.save")
        raw = variant.check_raw(raw, what=f"--latents {latents_file}").astype(np.float32)
        if n is not None and n != len(raw):
            raise RenderError(f"--n {n} disagrees with --latents {latents_file}, which holds "
                              f"{len(raw)} rows. Fix: drop --n.")
    elif raw is None:
        if n is None or n < 1:
            raise RenderError(f"--n must be a positive number of images, got {n}")
        raw = variant.sample(n, seed)
    return RenderJob(SplitLayout(Path(root), split), variant, settings, seed, raw,
                     str(latents_file) if latents_file else None, regions=regions)


def plan_track_job(root: Path, track, split: str, device: str = "cpu", draw: tuple[int, int] | None = None
                   ) -> RenderJob:
    """The job that renders exactly ``track``'s ``split`` (an ``ident3d.tracks.Track``); with ``draw``
    = (n, seed), a fresh draw of ``n`` images from the same distribution with another seed."""
    from dataclasses import replace

    from ident3d.regions import split_latents

    spec = track.split(split)
    if draw is not None:
        spec = replace(spec, n=draw[0], seed=draw[1], latents_sha256=None)
    regions = {"region": spec.region, "exclude": list(spec.exclude), "regions": track.regions} if (
        spec.region or spec.exclude) else None
    if spec.pairs:  # a paired split: spec.n images, spec.n / 2 pairs
        job = plan_job(root, split, n=spec.n // 2, seed=spec.seed, variant=track.variant,
                       settings=track_settings(track, device), pairs=spec.pairs)
    else:
        job = plan_job(root, split, n=spec.n, seed=spec.seed, variant=track.variant,
                       settings=track_settings(track, device), regions=regions,
                       raw=split_latents(track, split, spec) if regions else None)
    if draw is None and job.record()["raw_latents_sha256"] != spec.latents_sha256:
        raise RenderError(f"track {track.id}: seed {spec.seed} no longer gives the track's latents with "
                          "this numpy (sha256 differs), so this render would not be the track. Fix: "
                          "report it; the track then needs its latents file shipped.")
    return job


def _read(path: Path) -> dict:
    document = read_json(path, RenderError, "restore it, or delete the split folder and render it "
                         "again (a job record is written by `ident3d render`)")
    if not isinstance(document, dict) or not isinstance(document.get("n", 0), int):
        raise RenderError(f"{path}: not a render job record. Fix: restore it, or delete the split "
                          "folder and render it again.")
    return document


def _differences(old: dict, new: dict) -> list[str]:
    return [f"{k}: on disk {old.get(k)!r}, now {new.get(k)!r}" for k in new if old.get(k) != new[k]]


def prepare(job: RenderJob) -> dict[str, Any]:
    """Refuse to mix settings with what is on disk; then write latents and the job record, and
    return the record (the one read from disk, which agrees with the job, or the one written)."""
    lay = job.layout
    record = job.record()
    old = _read(lay.render_job) if lay.render_job.exists() else None
    if old is not None:
        diff = _differences(old, record)
        grown = {d.partition(":")[0] for d in diff} == {"n", "raw_latents_sha256"}  # more of the same draw
        if grown and isinstance(old.get("n"), int) and record["n"] > old["n"]:
            raise ManifestMismatchError(
                f"{lay.folder} already holds a render of {old.get('n')} images; this asks for "
                f"{record['n']}. Fix: render the larger split into a new folder with --grow-from "
                f"{lay.folder} (its images are reused, only the new ones rendered), or repeat "
                f"--n {old.get('n')} to resume.")
        if diff:
            raise ManifestMismatchError(
                f"{lay.folder} already holds a render with other settings ({'; '.join(diff)}). "
                "Fix: use another --data or --split, or repeat the original settings to resume.")
    elif lay.manifest.exists() or lay.raw_latents.exists():
        raise ManifestMismatchError(
            f"{lay.folder} already holds a dataset not rendered by this command. "
            "Fix: choose an empty --data or --split.")
    lay.images.mkdir(parents=True, exist_ok=True)
    if not lay.raw_latents.exists():
        atomic.save_npy(lay.raw_latents, job.raw)
    if not lay.latents.exists():
        atomic.save_npy(lay.latents, job.variant.scene_latents(job.raw))
    if not lay.captions.exists():
        text = "".join(f"{line}\n" for line in captions(job.variant.scene_params(job.raw)))
        atomic.write_bytes(lay.captions, text.encode())
    if old is not None:
        return old
    atomic.write_json(lay.render_job, record)
    return record


def shard_range(n: int, shard: int, num_shards: int) -> range:
    if not 0 <= shard < num_shards:
        raise RenderError(f"--shard {shard}/{num_shards}: expected 0 <= I < N")
    return range(shard * n // num_shards, (shard + 1) * n // num_shards)


def image_is_complete(path: Path) -> bool:
    """Cheap check that a PNG is whole: it exists and ends with the IEND chunk."""
    try:
        with open(path, "rb") as f:
            f.seek(-len(PNG_END), 2)
            return f.read() == PNG_END
    except OSError:
        return False


def render_split(job: RenderJob, *, engine: str = "local", workers: int = 1,
                 shard: tuple[int, int] = (0, 1), ray_address: str | None = None,
                 progress: bool = True, stop: threading.Event | None = None) -> Path | None:
    """Render the shard's missing images, record the shard, and finalize when all shards exist
    (``stop``, set by another thread, ends a local render early: ``engines.run_local``).

    Returns the manifest path once the split is complete, else None (other shards outstanding).
    """
    if engine not in engines.ENGINES:
        raise RenderError(f"unknown engine {engine!r}; expected one of {', '.join(engines.ENGINES)}")
    lay = job.layout
    record = prepare(job)
    if lay.manifest.exists():
        broken = [i for i in range(job.n) if not image_is_complete(lay.image(i, job.padding))]
        if broken:
            repair_split(lay, broken, engine=engine, workers=workers, ray_address=ray_address,
                         progress=progress)
        else:
            log.info("%s is complete; nothing to render", lay.folder)
        return lay.manifest
    indices = shard_range(job.n, *shard)
    todo = [i for i in indices if not image_is_complete(lay.image(i, job.padding))]
    if todo:
        params = job.variant.scene_params(job.raw[todo])
        tasks = [(i, str(lay.image(i, job.padding)), params.row(k)) for k, i in enumerate(todo)]
        with tqdm(total=len(indices), initial=len(indices) - len(todo), unit="img",
                  desc=f"render {lay.split} {shard[0]}/{shard[1]}", disable=not progress) as bar:
            engines.run(engine, job.settings, tasks, workers, ray_address, bar.update, stop)
    write_shard_record(job, shard, indices)
    return finalize(lay, record) if shards_complete(lay, job.n) else None


def _shard_path(lay: SplitLayout, shard: int, num_shards: int) -> Path:
    return lay.shards / f"shard-{shard:05d}-of-{num_shards:05d}.json"


def write_shard_record(job: RenderJob, shard: tuple[int, int], indices: range) -> None:
    lay = job.layout
    files = {}
    for i in indices:
        path = lay.image(i, job.padding)
        if not image_is_complete(path):
            raise RenderError(f"{path} is missing or truncated after rendering. Fix: re-run.")
        files[path.name] = atomic.sha256_file(path)
    atomic.write_json(_shard_path(lay, *shard), {"shard": shard[0], "num_shards": shard[1],
                                                 "start": indices.start, "stop": indices.stop,
                                                 "files": files})


def _records(lay: SplitLayout) -> list[dict]:
    return [_read(p) for p in sorted(lay.shards.glob("shard-*.json"))]


def shards_complete(lay: SplitLayout, n: int) -> bool:
    covered = np.zeros(n, dtype=bool)
    for r in _records(lay):
        covered[r["start"]:r["stop"]] = True
    return bool(covered.all())


def finalize(lay: SplitLayout, record: dict[str, Any] | None = None) -> Path:
    """Merge shard records into ``manifest.json`` (with image statistics) and drop the records;
    ``record`` is the split's job record when the caller holds it, else it is read from disk."""
    if lay.manifest.exists():
        read_manifest(lay.manifest)
        return lay.manifest
    if record is None:
        if not lay.render_job.exists():
            raise RenderError(f"{lay.folder}: no render job to finalize. Fix: run `ident3d render` first.")
        record = _read(lay.render_job)
    if not shards_complete(lay, record["n"]):
        raise RenderError(f"{lay.folder}: some shards are not rendered yet "
                          f"({len(_records(lay))} records in {lay.shards}). Fix: render them, then "
                          "run `ident3d render --finalize` again.")
    files: dict[str, str] = {}
    for shard in _records(lay):
        files.update(shard["files"])
    n, padding = record["n"], padding_width(record["n"])
    names = [lay.image(i, padding).name for i in range(n)]
    missing = [name for name in names if name not in files]
    if missing:
        raise RenderError(f"{lay.folder}: shard records miss {missing[:3]}. Fix: re-run the shards.")
    mean, std = channel_stats([lay.images / name for name in names])
    renderer = {"name": "ident3d.render", "ident3d": _version("ident3d"),
                "blender": _version("bpy"), "engine": record["render_settings"]["engine"]}
    seeds = {"latents": record["seed"], "cycles": record["render_settings"]["cycles_seed"]}
    manifest = build_manifest(
        variant=split_variant(record), n=n, padding=padding, renderer=renderer,
        settings=record["render_settings"], seeds=seeds, latents_sha256=record["raw_latents_sha256"],
        files={name: files[name] for name in names}, image_mean=mean, image_std=std,
        pairs=record.get("pairs"))
    atomic.write_json(lay.manifest, manifest)
    # Temporary images of workers killed mid-write; safe to drop only now that no shard is running.
    for path in lay.images.glob(".*.tmp.png"):
        path.unlink()
    for path in lay.shards.glob("shard-*.json"):
        path.unlink()
    lay.shards.rmdir()
    return lay.manifest


def repair_split(lay: SplitLayout, indices: list[int], *, engine: str = "local", workers: int = 1,
                 ray_address: str | None = None, progress: bool = True) -> list[Path]:
    """Re-render images ``indices`` of a finished split from its manifest and record their new
    checksums. Pixels of a setting are deterministic, so the manifest's statistics stay valid."""
    manifest = read_manifest(lay.manifest)
    if manifest.get("renderer", {}).get("name") != "ident3d.render":
        raise RenderError(f"{lay.folder} was not rendered by ident3d, so its images cannot be "
                          "re-rendered. Fix: re-download or re-create the split.")
    raw = read_array(lay.raw_latents, RenderError, "restore raw_latents.npy; the manifest records its "
                     "sha256")
    if atomic.sha256_array(raw) != manifest["raw_latents_sha256"]:
        raise RenderError(f"{lay.raw_latents}: differs from the latents this split was rendered from "
                          "(sha256 in manifest.json). Fix: restore the file, or render a new split.")
    settings = RenderSettings(**manifest["render_settings"])
    paths = [lay.image(i, manifest["padding"]) for i in indices]
    params = split_variant(manifest).scene_params(raw[indices])
    tasks = [(i, str(path), params.row(k)) for k, (i, path) in enumerate(zip(indices, paths,
                                                                             strict=True))]
    with tqdm(total=len(tasks), unit="img", desc=f"repair {lay.split}", disable=not progress) as bar:
        engines.run(engine, settings, tasks, workers, ray_address, bar.update)
    for path in paths:
        if not image_is_complete(path):
            raise RenderError(f"{path} is still missing after re-rendering. Fix: re-run.")
        manifest["files"][path.name] = atomic.sha256_file(path)
    atomic.write_json(lay.manifest, manifest)
    log.info("re-rendered %d image(s) of %s (first: %s)", len(paths), lay.folder, paths[0].name)
    return paths


def render_track_rows(track, raw: np.ndarray, folder: Path, *, workers: int = 1) -> list[Path]:
    """Render latent rows with a track's variant and settings to ``folder/<k>.png`` (a scratch
    render: no job, no manifest). ``ident3d.tracks`` finds this through the ``ident3d.renderers``
    entry point to re-render a sample of a split it verifies."""
    params = get_variant(track.variant).scene_params(raw)
    paths = [Path(folder) / f"{k}.png" for k in range(len(raw))]
    tasks = [(k, str(path), params.row(k)) for k, path in enumerate(paths)]
    engines.run("local", track_settings(track), tasks, workers, None, lambda _done: None)
    return paths


def render_track_draw(track, split: str, root: Path, *, n: int, seed: int, workers: int = 2,
                      stop: threading.Event | None = None) -> Path:
    """Render a fresh draw of ``track``'s ``split``: ``n`` images of its distribution drawn with
    ``seed``, with the track's settings, as a finished split ``root/split`` (manifest included);
    ``stop`` ends it early (``engines.RenderStopped``). ``ident3d.fresh`` finds this through the
    ``ident3d.renderers`` entry point."""
    job = plan_track_job(root, track, split, draw=(n, seed))
    return render_split(job, workers=workers, progress=False, stop=stop)


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None
