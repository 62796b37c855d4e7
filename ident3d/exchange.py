"""Export a split to the formats the ecosystem shares, and import it back, losslessly.

* Parquet shards that Hugging Face ``datasets`` loads (``load_dataset("parquet", data_files=...)``):
  one row per image with ``image`` (the PNG bytes, as the library's ``Image`` feature), ``index``,
  ``caption``, ``raw_latents`` and ``latents`` (one float32 per latent of the variant), and one column
  per factor named as the variant names it (its raw value; a class latent as a ``ClassLabel`` with the
  class names); the manifest is in each file's
  metadata and in ``__ident3d__/<split>.manifest.json``, a folder ``datasets`` skips, so that
  ``load_dataset(DIR)`` and ``load_dataset("parquet", data_dir=DIR)`` read only the shards.
* WebDataset tar shards: per image ``<index>.png``, ``<index>.txt`` (the caption),
  ``<index>.raw_latents.npy`` and ``<index>.latents.npy``, plus the same manifest file.

Captions are made from the latents (``ident3d.captions``), so an import writes ``captions.txt`` from
the checked latents rather than from the shards' text.

PNG bytes are carried unchanged, so an imported split has the same files, checksums and manifest as
the original. An export may be crafted, so the import reads within bounds (decompressed bytes per
row and per shard, checked from the Parquet metadata before anything is decompressed), requires the
manifest's checksum of every image and checks each one, checks every image's size (from its header)
against the manifest's resolution and the latents for finite values in range, and writes nothing
to the split folder until all of that has passed.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from ident3d import atomic
from ident3d.captions import captions
from ident3d.errors import DatasetError, LatentError
from ident3d.extras import require
from ident3d.layout import SplitLayout
from ident3d.manifest import image_size_problem, manifest_resolution, read_manifest
from ident3d.readers import load_npy_bytes, open_regular
from ident3d.variants import split_variant

if TYPE_CHECKING:  # torch loads only when a split is exported
    from ident3d.datasets import ThreeDIdent

FORMATS = ("parquet", "webdataset")
MANIFEST_KEY = b"ident3d_manifest"
MEMBER = re.compile(r"^(\d+)\.(png|txt|raw_latents\.npy|latents\.npy)$")
RESERVED = ("image", "index", "caption", "raw_latents", "latents")  # columns a factor may not be named
MAX_ROW_BYTES = 16 << 20  # one image and its latents, decompressed; anything larger is not ours
METADATA = "__ident3d__"  # beside the shards; Hugging Face datasets skips folders named __*__


def manifest_file(folder: Path, split: str) -> Path:
    return Path(folder) / METADATA / f"{split}.manifest.json"


def _hf_features(variant: Any) -> dict[str, Any]:
    row = {"feature": {"dtype": "float32", "_type": "Value"}, "length": variant.n_latents,
           "_type": "Sequence"}
    factors = {f.name: ({"names": list(f.classes), "_type": "ClassLabel"} if f.is_class
                        else {"dtype": "float32", "_type": "Value"}) for f in variant.factors}
    return {"image": {"_type": "Image"}, "index": {"dtype": "int64", "_type": "Value"},
            "caption": {"dtype": "string", "_type": "Value"}, "raw_latents": row, "latents": dict(row),
            **factors}


def _shards(n: int, shard_size: int) -> list[range]:
    return [range(start, min(n, start + shard_size)) for start in range(0, n, shard_size)]


def export_split(root: Path, split: str, out: Path, fmt: str, shard_size: int = 10_000,
                 info: dict[str, str] | None = None) -> list[Path]:
    """Write ``root/split`` as ``fmt`` shards into ``out`` (created; existing shards are refused).
    ``info``: the Hugging Face ``DatasetInfo`` fields (description, citation, homepage, license) that
    Parquet shards carry beside their features (``ident3d publish`` fills them from its card)."""
    from ident3d.datasets import ThreeDIdent

    if fmt not in FORMATS:
        raise DatasetError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    dataset = ThreeDIdent(root, split)
    if dataset.manifest is None:
        raise DatasetError(f"{dataset.layout.folder}: no manifest.json, so there is nothing to check an "
                           f"import against. Fix: run `ident3d pack --data {root} --split {split}` first "
                           "(it writes one).")
    scene = np.load(dataset.layout.latents, allow_pickle=False).astype(np.float32)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    shards = _shards(len(dataset), shard_size)
    suffix = "parquet" if fmt == "parquet" else "tar"
    paths = [out / f"{split}-{k:05d}-of-{len(shards):05d}.{suffix}" for k in range(len(shards))]
    taken = [p for p in [*paths, manifest_file(out, split)] if p.exists()]
    if taken:
        raise DatasetError(f"{taken[0]} already exists. Fix: export into an empty folder.")
    clash = [f.name for f in dataset.variant_spec.factors if f.name in RESERVED]
    if clash:
        raise DatasetError(f"{dataset.layout.folder}: factor {clash[0]!r} would share a column with the "
                           f"export's own ({', '.join(RESERVED)}). Fix: rename the factor in the variant.")
    manifest_bytes = dataset.layout.manifest.read_bytes()
    texts = dataset.captions
    for path, rows in zip(paths, shards, strict=True):
        if fmt == "parquet":
            _write_parquet(path, dataset, scene, texts, rows, manifest_bytes, info or {})
        else:
            _write_tar(path, dataset, scene, texts, rows)
    manifest_file(out, split).parent.mkdir(exist_ok=True)
    atomic.write_bytes(manifest_file(out, split), manifest_bytes)
    return paths


def _write_parquet(path: Path, dataset: ThreeDIdent, scene: np.ndarray, texts: list[str], rows: range,
                   manifest: bytes, info: dict[str, str]) -> None:
    pa, pq = require("pyarrow"), require("pyarrow.parquet")
    images = [{"bytes": dataset.image_path(i).read_bytes(), "path": dataset.image_path(i).name} for i in rows]
    raw = dataset.latents[rows.start:rows.stop]
    factors = {f.name: pa.array(raw[:, f.index].astype(np.int64 if f.is_class else np.float32))
               for f in dataset.variant_spec.factors}
    table = pa.table({
        "image": pa.array(images, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        "index": pa.array(list(rows), type=pa.int64()),
        "caption": pa.array(texts[rows.start:rows.stop], type=pa.string()),
        "raw_latents": pa.array(list(raw), type=pa.list_(pa.float32())),
        "latents": pa.array(list(scene[rows.start:rows.stop]), type=pa.list_(pa.float32())),
        **factors,
    })
    features = _hf_features(dataset.variant_spec)
    metadata = {b"huggingface": json.dumps({"info": {**info, "features": features}}).encode(),
                MANIFEST_KEY: manifest}
    table = table.replace_schema_metadata(metadata)
    with atomic.atomic_path(path, suffix=".parquet") as tmp:
        pq.write_table(table, tmp)


def _npy_bytes(row: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, row, allow_pickle=False)
    return buffer.getvalue()


def _write_tar(path: Path, dataset: ThreeDIdent, scene: np.ndarray, texts: list[str], rows: range) -> None:
    width = dataset.padding
    with atomic.atomic_path(path, suffix=".tar") as tmp, tarfile.open(tmp, "w") as tar:
        for i in rows:
            key = f"{i:0{width}d}"
            for name, data in ((f"{key}.png", dataset.image_path(i).read_bytes()),
                               (f"{key}.txt", texts[i].encode()),
                               (f"{key}.raw_latents.npy", _npy_bytes(dataset.latents[i])),
                               (f"{key}.latents.npy", _npy_bytes(scene[i]))):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))


def import_split(source: Path, root: Path, split: str) -> SplitLayout:
    """Rebuild ``root/split`` from the shards in ``source`` written by ``export_split``."""
    source = Path(source)
    manifest_path = manifest_file(source, split)
    if not manifest_path.exists() and (source / f"{split}.manifest.json").exists():
        manifest_path = source / f"{split}.manifest.json"  # where exports before 0.2 put it
    if not manifest_path.exists():
        raise DatasetError(f"{manifest_path} not found: {source} holds no exported split {split!r}. "
                           "Fix: pass the folder `ident3d export` wrote, and the same --split.")
    manifest = read_manifest(manifest_path)
    fields = {"n": int, "padding": int, "raw_latents_sha256": str, "files": dict}
    wrong = [k for k, kind in fields.items() if not isinstance(manifest.get(k), kind)
             or isinstance(manifest.get(k), bool)]
    if wrong or not 0 < manifest["n"] <= 10**8 or not 0 < manifest["padding"] <= 12:
        raise DatasetError(f"{manifest_path}: not the manifest of an exported split (field "
                           f"{(wrong or ['n'])[0]}). Fix: export the split again.")
    names = [SplitLayout(Path(root), split).image(i, manifest["padding"]).name for i in range(manifest["n"])]
    unlisted = [name for name in names if not isinstance(manifest["files"].get(name), str)]
    if unlisted:
        raise DatasetError(f"{manifest_path}: field files lists no checksum for {unlisted[0]} "
                           f"({len(unlisted)} image(s) unlisted), so the images cannot be checked. Fix: "
                           "export the split again with `ident3d export`.")
    parquet = sorted(source.glob(f"{split}-*-of-*.parquet"))
    tars = sorted(source.glob(f"{split}-*-of-*.tar"))
    if bool(parquet) == bool(tars):
        raise DatasetError(f"{source}: expected the shards of one format for split {split!r}, found "
                           f"{len(parquet)} Parquet and {len(tars)} tar files. Fix: import one export.")
    try:
        k = split_variant(manifest).n_latents
    except LatentError as error:
        raise DatasetError(f"{manifest_path}: {error}. Fix: export the split again.") from None
    rows = _read_parquet(parquet, k) if parquet else _read_tars(tars, k)
    return _write_split(rows, manifest, SplitLayout(Path(root), split), source)


def _check_parquet_size(path: Path, metadata: Any) -> None:
    """Refuse a shard whose row groups decompress to more than MAX_ROW_BYTES per row (a zstd bomb
    is a few kB on disk), from the footer alone."""
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        if group.total_byte_size > max(1, group.num_rows) * MAX_ROW_BYTES:
            raise DatasetError(f"{path}: row group {g} decompresses to {group.total_byte_size:,} bytes for "
                               f"{group.num_rows} rows, more than {MAX_ROW_BYTES:,} per row; not an ident3d "
                               "export. Fix: export the split again.")


def _read_parquet(paths: list[Path], k: int) -> dict[int, dict[str, Any]]:
    pq = require("pyarrow.parquet")
    pa = require("pyarrow")
    rows: dict[int, dict[str, Any]] = {}
    for path in paths:
        try:
            with open_regular(path) as f:
                shard = pq.ParquetFile(f)
                _check_parquet_size(path, shard.metadata)
                table = shard.read(columns=["image", "index", "raw_latents", "latents"])
                captioned = "caption" in shard.schema_arrow.names
            for record in table.to_pylist():
                raw = np.asarray(record["raw_latents"], dtype=np.float32)
                scene = np.asarray(record["latents"], dtype=np.float32)
                png = record["image"]["bytes"]
                if raw.shape != (k,) or scene.shape != (k,) or not isinstance(png, bytes):
                    raise ValueError(f"row {record['index']} is not {k} + {k} floats and PNG bytes")
                rows[int(record["index"])] = {"png": png, "raw": raw, "scene": scene,
                                              **({"caption": True} if captioned else {})}
        except (pa.ArrowException, KeyError, TypeError, ValueError, OSError) as error:
            raise DatasetError(f"{path}: not a Parquet shard of an ident3d export ({error}). Fix: export "
                               "the split again.") from None
    return rows


def _read_tars(paths: list[Path], k: int) -> dict[int, dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for path in paths:
        try:
            with open_regular(path) as f, tarfile.open(fileobj=f, mode="r:") as tar:
                for member in tar:
                    _read_member(path, tar, member, rows, k)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise DatasetError(f"{path}: not a complete tar shard of an ident3d export ({error}). Fix: "
                               "copy the shard again, or export the split again.") from None
    return rows


def _read_member(path: Path, tar: tarfile.TarFile, member: tarfile.TarInfo, rows: dict[int, dict[str, Any]],
                 k: int) -> None:
    match = MEMBER.match(member.name)
    if not member.isfile() or match is None or member.size > MAX_ROW_BYTES:
        raise DatasetError(f"{path}: member {member.name!r} is not part of an ident3d export (expected "
                           "regular files <index>.png / .raw_latents.npy / .latents.npy of at most "
                           f"{MAX_ROW_BYTES:,} bytes). Fix: export the split again.")
    data = tar.extractfile(member).read()
    if len(data) != member.size:
        raise DatasetError(f"{path}: member {member.name!r} is truncated ({len(data):,} of {member.size:,} "
                           "bytes). Fix: copy the shard again, or export the split again.")
    row = rows.setdefault(int(match[1]), {})
    if match[2] in ("png", "txt"):
        row["png" if match[2] == "png" else "caption"] = data if match[2] == "png" else True
        return
    try:
        value = load_npy_bytes(data)
    except ValueError as error:
        raise DatasetError(f"{path}: member {member.name!r} is not a readable .npy array ({error}). Fix: "
                           "export the split again.") from None
    if value.shape != (k,) or not np.issubdtype(value.dtype, np.floating):
        raise DatasetError(f"{path}: {member.name} holds {value.shape} {value.dtype}, expected {k} floats. "
                           "Fix: export the split again.")
    row["raw" if match[2].startswith("raw") else "scene"] = value.astype(np.float32)


def _write_split(rows: dict[int, dict[str, Any]], manifest: dict[str, Any], lay: SplitLayout,
                 source: Path) -> SplitLayout:
    n, padding = manifest["n"], manifest["padding"]
    if sorted(rows) != list(range(n)) or any(not {"png", "raw", "scene"} <= set(r) for r in rows.values()):
        raise DatasetError(f"{source}: the shards hold {len(rows)} complete rows, the manifest says {n}. "
                           "Fix: copy every shard of the export.")
    raw = np.stack([rows[i]["raw"] for i in range(n)])
    if atomic.sha256_array(raw) != manifest["raw_latents_sha256"]:
        raise DatasetError(f"{source}: the latents differ from the manifest's (raw_latents_sha256). Fix: "
                           "export the split again.")
    scene = np.stack([rows[i]["scene"] for i in range(n)])
    try:
        split_variant(manifest).check_raw(raw, what=f"{source}: raw_latents")
        if not np.isfinite(scene).all():
            raise LatentError(f"{source}: latents: row {int(np.argwhere(~np.isfinite(scene))[0, 0])} is not "
                              "finite")
    except LatentError as error:  # its own fix is about writing latents; this one is about the export
        raise DatasetError(f"{str(error).split('. Fix:')[0]}. Fix: export the split again.") from None
    resolution = manifest_resolution(manifest)
    for i in range(n):
        name = lay.image(i, padding).name
        if hashlib.sha256(rows[i]["png"]).hexdigest() != manifest["files"][name]:
            raise DatasetError(f"{source}: image {name} differs from the manifest's checksum. Fix: export "
                               "the split again.")
        try:
            with Image.open(io.BytesIO(rows[i]["png"]), formats=["PNG"]) as im:
                size = im.size  # the header only: nothing is decoded
        except (OSError, ValueError) as error:
            raise DatasetError(f"{source}: image {name} is not a PNG ({error}). Fix: export the split "
                               "again.") from None
        resolution = resolution or size[0]
        problem = image_size_problem(Path(source) / name, size, resolution)
        if problem:
            raise DatasetError(f"{problem}. Fix: export the split again.")
    if lay.folder.exists() and any(lay.folder.iterdir()):
        raise DatasetError(f"{lay.folder} already holds files. Fix: import into an empty --data/--split.")
    Path(lay.root).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{lay.folder.name}.importing.", dir=lay.root))
    try:
        target = SplitLayout(staging.parent, staging.name)
        target.images.mkdir(parents=True)
        for i in range(n):
            target.image(i, padding).write_bytes(rows[i]["png"])
        atomic.save_npy(target.raw_latents, raw)
        atomic.save_npy(target.latents, scene)
        if all("caption" in rows[i] for i in range(n)):  # the export carried captions: remake them
            text = "".join(f"{line}\n" for line in captions(split_variant(manifest).scene_params(raw)))
            atomic.write_bytes(target.captions, text.encode())
        manifest = {k: v for k, v in manifest.items() if k != "packed"}  # re-pack to get images.npy
        atomic.write_json(target.manifest, manifest)
        if lay.folder.exists():
            lay.folder.rmdir()
        staging.rename(lay.folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return lay
