"""Data you can vouch for, tried as a hostile user would (issue "Data you can vouch for"): tracks
that cannot be faked, outputs that never clobber inputs, imports that cannot bomb, specs that
round-trip, readers that never hang, and one line naming the culprit for each failure.

Every case runs the real CLI (``ident3d.cli.main``) in this process on files crafted here, and
must end with the expected exit code and the culprit named, without a traceback, without the
generic "internal error" line, and without changing any file outside ``out/``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import write_fake_split
from PIL import Image

from ident3d.atomic import sha256_array
from ident3d.cli import main
from ident3d.exchange import export_split
from ident3d.latents import sample_uniform
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import build_manifest
from ident3d.tracks import get_track

SIZE = 16


def png_header_only(width: int, height: int) -> bytes:
    """A valid PNG of ``width`` x ``height`` black pixels, compressed row by row (a decompression
    bomb: a few hundred kB on disk for 13000 x 13000)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer, row = zlib.compressobj(9), b"\0" * (1 + 3 * width)
    body = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def png_bytes(size: int, value: int = 128) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((size, size, 3), value, np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def craft_parquet_export(folder: Path, pngs: list[bytes], raw: np.ndarray, *, files: bool = True,
                         resolution: int = SIZE, huge_row: int = 0) -> None:
    """An export folder whose manifest agrees with its rows (checksums included), so that only the
    one defect asked for remains."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    n, width = len(pngs), padding_width(len(pngs))
    names = [f"{i:0{width}d}.png" for i in range(n)]
    checksums = {name: hashlib.sha256(png).hexdigest() for name, png in zip(names, pngs, strict=True)}
    manifest = build_manifest(
        variant="v2", n=n, padding=width, renderer={"name": "crafted"}, settings={"resolution": resolution},
        seeds={}, latents_sha256=sha256_array(raw),
        files=checksums if files else {},
        image_mean=[0.5] * 3, image_std=[0.1] * 3)
    images = [{"bytes": png + b"\0" * huge_row, "path": name} for png, name in zip(pngs, names, strict=True)]
    table = pa.table({
        "image": pa.array(images, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        "index": pa.array(range(n), type=pa.int64()),
        "raw_latents": pa.array(list(raw), type=pa.list_(pa.float32())),
        "latents": pa.array(list(raw), type=pa.list_(pa.float32())),
    })
    pq.write_table(table, folder / "test-00000-of-00001.parquet", compression="zstd")
    (folder / "test.manifest.json").write_text(json.dumps(manifest))


def forged_track_split(root: Path, n_noise_from: int) -> None:
    """The CPU track's test latents and settings with Gaussian noise for pixels, whose mean and std
    match the track's fingerprint (so the fingerprint alone would pass it)."""
    track = get_track("3dident-v2-64")
    spec = track.split("test")
    lay = SplitLayout(root, "test")
    lay.images.mkdir(parents=True)
    raw = sample_uniform(spec.n, spec.seed)
    np.save(lay.raw_latents, raw)
    np.save(lay.latents, raw)
    rng = np.random.default_rng(0)
    mean, std = np.array(track.fingerprint["mean"]) * 255, np.array(track.fingerprint["std"]) * 255
    for i in range(n_noise_from, spec.n):
        pixels = np.clip(rng.normal(mean, std, (64, 64, 3)).round(), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(lay.image(i, 4))
    manifest = build_manifest(
        variant="v2", n=spec.n, padding=4, renderer={"name": "ident3d.render"},
        settings=dict(track.pixel_settings()), seeds={"latents": spec.seed},
        latents_sha256=spec.latents_sha256, files={}, image_mean=track.fingerprint["mean"],
        image_std=track.fingerprint["std"])
    (lay.manifest).write_text(json.dumps(manifest))


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    w = tmp_path_factory.mktemp("integrity")
    write_fake_split(w / "data", "test", n=40, size=SIZE)
    np.save(w / "true.npy", np.load(w / "data/test/raw_latents.npy"))
    (w / "existing.json").write_text("a user's file")
    (w / "fig.png").write_bytes(png_bytes(8))
    (w / "occupied").mkdir()
    (w / "occupied/result.json").write_text("a user's result")

    # tracks
    forged_track_split(w / "forged-track", 0)
    manifest = json.loads((w / "forged-track/test/manifest.json").read_text())
    from ident3d.variants import get_variant

    spec = get_variant("v2").to_dict()
    spec["latents"][0]["scale"] = "1/2"
    (w / "spec-named-v2/test").mkdir(parents=True)
    np.save(w / "spec-named-v2/test/raw_latents.npy", np.load(w / "forged-track/test/raw_latents.npy"))
    (w / "spec-named-v2/test/manifest.json").write_text(json.dumps({**manifest, "variant_spec": spec}))
    published = SplitLayout(w / "forged-published", "test")
    published.images.mkdir(parents=True)
    np.save(published.raw_latents, sample_uniform(25_000, 9))
    np.save(published.latents, sample_uniform(25_000, 9))
    tiny = png_bytes(8)
    for i in range(25_000):
        published.image(i, 5).write_bytes(tiny)
    published.download_record.write_text(json.dumps(
        {"record": "4502485", "file": "3dident_test.tar",
         "md5": get_track("3dident-published").splits["test"].md5,
         "files": {"raw_latents.npy": hashlib.sha256(published.raw_latents.read_bytes()).hexdigest()}}))

    # a self-reported result whose track was edited by hand
    from ident3d.evaluation import evaluate

    result = evaluate(w / "true.npy", w / "data", progress=False).document
    result["dataset"]["track"] = "3dident-v2-64@1"
    (w / "edited.json").write_text(json.dumps(result))
    from ident3d.leaderboard.entries import ENTRY_SCHEMA

    (w / "entries").mkdir()
    (w / "edited-entries").mkdir()
    entry = {"schema": ENTRY_SCHEMA, "id": "Doe2026Edited", "name": "m", "authors": ["Doe"], "paper": None,
             "code": None, "training_data": "x", "positives": "x", "loss": "x", "model_space": "x",
             "status": "self-reported", "footnote": None, "dataset": "3dident-v2-64@1",
             "protocol": result["protocol"], "metrics": {k: result["metrics"][k] for k in result["metrics"]},
             "checkpoint_sha256": None, "result": result}
    (w / "edited-entries/Doe2026Edited.json").write_text(json.dumps(entry))

    # pack, export, import
    write_fake_split(w / "foreign-pack", "test", n=6, size=SIZE)
    (w / "foreign-pack/test/images.npy").write_bytes(b"someone's array")
    export_split(w / "data", "test", w / "exp", "parquet")
    export_split(w / "data", "test", w / "wds", "webdataset")
    raw = sample_uniform(2, 0)
    craft_parquet_export(w / "imports/bomb", [png_bytes(SIZE)] * 2, raw, huge_row=40 << 20)
    craft_parquet_export(w / "imports/huge-png", [png_header_only(13000, 13000)], raw[:1], resolution=13000)
    craft_parquet_export(w / "imports/no-files", [png_bytes(SIZE)] * 2, raw, files=False)
    nan = np.full((2, 10), np.nan, np.float32)
    craft_parquet_export(w / "imports/nan-latents", [png_bytes(SIZE)] * 2, nan)
    (w / "imports/truncated").mkdir()
    tar = (w / "wds/test-00000-of-00001.tar").read_bytes()
    (w / "imports/truncated/test-00000-of-00001.tar").write_bytes(tar[:len(tar) // 2 + 700])
    exported_manifest = (w / "wds/__ident3d__/test.manifest.json").read_bytes()
    (w / "imports/truncated/test.manifest.json").write_bytes(exported_manifest)  # where older exports put it
    (w / "imports/pickled").mkdir()
    with tarfile.open(w / "imports/pickled/test-00000-of-00001.tar", "w") as out:
        buffer = io.BytesIO()
        np.save(buffer, np.array([{"a": 1}] * 10, dtype=object), allow_pickle=True)
        for name, data in (("00.png", png_bytes(SIZE)), ("00.raw_latents.npy", buffer.getvalue())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    (w / "imports/pickled/test.manifest.json").write_bytes(exported_manifest)

    # variant specs
    (w / "specs").mkdir()
    (w / "elsewhere").mkdir()
    (w / "elsewhere/secret.toml").write_text('api_token_xyz = "hunter2"\n')
    (w / "specs/escape.toml").write_text('extends = "v2"\nname = "../../escape"\n')
    (w / "specs/far.toml").write_text(f'extends = "{w}/elsewhere/secret.toml"\nname = "far"\n')
    (w / "specs/mine.toml").write_text('extends = "v2"\n[[latents]]\nname = "object_x"\nscale = 0.5\n')

    # not files at all
    fifo_image = w / "fifo-image"
    write_fake_split(fifo_image, "test", n=10, size=SIZE)
    (fifo_image / "test/images/7.png").unlink()
    os.mkfifo(fifo_image / "test/images/7.png")
    write_fake_split(w / "fifo-manifest", "test", n=10, size=SIZE)
    (w / "fifo-manifest/test/manifest.json").unlink()
    os.mkfifo(w / "fifo-manifest/test/manifest.json")
    os.mkfifo(w / "config.toml")
    os.mkfifo(w / "fifo.npy")
    write_fake_split(w / "unfinished", "test", n=6, size=SIZE, manifest=False)
    (w / "unfinished/test/render_job.json").write_text("{}")

    # culprits that used to reach the generic handler
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2000000000000, 10), }"
    header = header.ljust(118) + "\n"
    (w / "huge.npy").write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
                                 + b"\0" * 64)
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(1)}, str(w / "list-config.safetensors"),
              metadata={"arch": "resnet18-contrastive", "config": json.dumps({"space": ["box"]})})
    stored = io.BytesIO()
    with zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as z:
        z.writestr("model/archive_format", "pt2")
    data = bytearray(stored.getvalue())
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # method field -> 99
        at = data.index(signature)
        data[at + offset:at + offset + 2] = struct.pack("<H", 99)
    (w / "method99.pt2").write_bytes(bytes(data))
    return w


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]  # "{w}" is replaced by the world folder
    code: int
    culprit: str  # must appear in what the command printed (stderr, or stdout for audit reports)
    absent: str | None = None  # must not appear anywhere in the output


D, OUT = "{w}/data", "{w}/out"
EVAL = ["evaluate", "--data", D, "--model", "{w}/true.npy", "--out"]
IMPORT = ["import", "--split", "test", "--data", f"{OUT}/imported", "--from"]
TRAIN = ["train", "--data", D, "--preset", "smoke", "--out"]

CASES = [
    # tracks are identified by content
    Case("track-noise-with-the-fingerprint", ["audit", "--data", "{w}/forged-track", "--split", "test",
                                              "--track", "3dident-v2-64", "--quick"], 1,
         "not the track's images"),
    Case("track-published-by-a-written-record", ["audit", "--data", "{w}/forged-published", "--split",
                                                 "test", "--track", "3dident-published", "--quick"], 1,
         "content:"),
    Case("track-spec-named-v2", ["audit", "--data", "{w}/spec-named-v2", "--split", "test", "--track",
                                 "3dident-v2-64"], 1, "a different spec under the same name"),
    Case("leaderboard-add-edited-track", ["leaderboard", "add", "{w}/edited.json", "--id", "Doe2026Edited",
                                          "--entries", f"{OUT}/entries"], 1, "dataset/n"),
    Case("leaderboard-build-edited-track", ["leaderboard", "build", "--entries", "{w}/edited-entries",
                                            "--markdown", f"{OUT}/LB.md", "--site", f"{OUT}/site.html"], 1,
         "Doe2026Edited.json"),
    # nothing a command reads is its output
    Case("evaluate-out-is-the-model", [*EVAL, "{w}/true.npy"], 1, "is the input"),
    Case("evaluate-out-is-the-manifest", [*EVAL, f"{D}/test/manifest.json"], 1, "lies inside the input"),
    Case("evaluate-out-exists", [*EVAL, "{w}/existing.json"], 1, "--overwrite"),
    Case("train-out-holds-a-users-file", [*TRAIN, "{w}/occupied"], 1, "result.json"),
    Case("train-out-inside-the-data", [*TRAIN, f"{D}/test/run"], 1, "lies inside the input"),
    Case("pack-foreign-images-npy", ["pack", "--data", "{w}/foreign-pack", "--split", "test"], 1,
         "does not list it"),
    Case("export-out-inside-the-data", ["export", "--data", D, "--split", "test", "--format", "parquet",
                                        "--out", f"{D}/test/shards"], 1, "lies inside the input"),
    Case("import-into-its-source", ["import", "--split", "test", "--data", "{w}/exp", "--from", "{w}/exp"], 1,
         "which this command reads"),
    Case("traverse-out-exists", ["traverse", "--out", "{w}/fig.png"], 1, "--overwrite"),
    Case("leaderboard-build-over-a-users-file", ["leaderboard", "build", "--entries", "{w}/entries",
                                                 "--markdown", "{w}/existing.json", "--site",
                                                 f"{OUT}/site.html"], 1,
         "not a leaderboard this command built"),
    Case("leaderboard-build-into-the-entries", ["leaderboard", "build", "--entries", "{w}/entries",
                                                "--markdown", "{w}/entries/LB.json", "--site",
                                                f"{OUT}/site.html"], 1, "lies inside the input"),
    # imports are bounded and checked before anything is written
    Case("import-zstd-bomb", [*IMPORT, "{w}/imports/bomb"], 1, "decompresses to"),
    Case("import-13000-px-png", [*IMPORT, "{w}/imports/huge-png"], 1, "13000 x 13000 px"),
    Case("import-manifest-without-files", [*IMPORT, "{w}/imports/no-files"], 1, "lists no checksum"),
    Case("import-nan-latents", [*IMPORT, "{w}/imports/nan-latents"], 1, "nan"),
    Case("import-truncated-tar", [*IMPORT, "{w}/imports/truncated"], 1, "test-00000-of-00001.tar"),
    Case("import-pickled-npy-member", [*IMPORT, "{w}/imports/pickled"], 1, "Python objects"),
    # names become paths only when they cannot leave their folder
    Case("split-name-with-a-path", ["render", "--data", f"{OUT}/r", "--split", "../../escape", "--n", "2"], 2,
         "--split"),
    # variant specs
    Case("spec-name-with-a-path", ["traverse", "--out", f"{OUT}/f.png", "--variant", "{w}/specs/escape.toml"],
         1, "must be letters"),
    Case("spec-extends-a-foreign-file", ["info", "--variant", "{w}/specs/far.toml"], 1,
         "expected a built-in variant", absent="api_token_xyz"),
    Case("spec-takes-a-built-in-name", ["info", "--variant", "{w}/specs/mine.toml"], 1,
         "is a built-in variant's"),
    # readers open regular files only, and never hang
    Case("audit-fifo-image", ["audit", "--data", "{w}/fifo-image"], 1,
         "7.png: cannot be decoded (is a FIFO"),
    Case("evaluate-fifo-manifest", ["evaluate", "--data", "{w}/fifo-manifest", "--model", "{w}/true.npy",
                                    "--out", f"{OUT}/r.json"], 1, "manifest.json"),
    Case("evaluate-fifo-model", [*EVAL[:4], "{w}/fifo.npy", "--out", f"{OUT}/r.json"], 1, "fifo.npy"),
    Case("train-config-fifo", [*TRAIN, f"{OUT}/run", "--config", "{w}/config.toml"], 1, "FIFO"),
    Case("train-config-dev-zero", [*TRAIN, f"{OUT}/run", "--config", "/dev/zero"], 1, "character device"),
    Case("audit-unfinished-render", ["audit", "--data", "{w}/unfinished"], 1, "did not finish"),
    # one line that names the culprit
    Case("npy-header-claims-72-tib", [*EVAL[:4], "{w}/huge.npy", "--out", f"{OUT}/r.json"], 1,
         "header claims"),
    Case("safetensors-config-list-for-a-name", [*EVAL[:4], "{w}/list-config.safetensors", "--out",
                                                f"{OUT}/r.json"], 1, "config space"),
    Case("pt2-unknown-compression-method", [*EVAL[:4], "{w}/method99.pt2", "--out", f"{OUT}/r.json"], 1,
         "method99.pt2"),
    Case("train-negative-seed", [*TRAIN, f"{OUT}/run", "--set", "seed=-1"], 1, "seed"),
    Case("train-billion-latents", [*TRAIN, f"{OUT}/run", "--set", "latent_dim=1000000000"], 1,
         "latent_dim"),
]


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of everything outside out/ (FIFOs are never opened): one lstat per
    entry of a scandir walk (the world holds 30,000 files, and every case takes two snapshots)."""
    found = {}

    def walk(directory: str, prefix: str) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                name = prefix + entry.name
                if name == "out":
                    continue
                info = entry.stat(follow_symlinks=False)
                found[name] = (info.st_size, info.st_mtime_ns)
                if entry.is_dir(follow_symlinks=False):
                    walk(entry.path, f"{name}/")

    walk(str(folder), "")
    return found


RENDERS = {"track-noise-with-the-fingerprint"}  # re-renders a sample in Blender


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", [pytest.param(c, marks=[pytest.mark.blender] if c.name in RENDERS else [])
                                  for c in CASES], ids=[c.name for c in CASES])
@pytest.mark.slow
def test_data_integrity_case(case: Case, world: Path, capsys):
    before = snapshot(world)
    argv = [a.replace("{w}", str(world)) for a in case.argv]
    try:
        code = main(["-q", *argv])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert code == case.code, printed
    errors = [line for line in captured.err.splitlines() if line.strip()]
    if case.argv[0] != "audit" or case.code == 2:  # audit reports on stdout; every other failure,
        assert len(errors) == 1 and errors[0].startswith("error: "), captured.err  # usage too: one line
    assert case.culprit in printed, printed
    assert "internal error" not in printed and "Traceback" not in printed
    if case.absent:
        assert case.absent not in printed
    assert snapshot(world) == before, "a file outside out/ changed"


def test_there_are_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_every_spec_value_reads_back_as_written():
    """Property test: random specs (numbers of every magnitude, texts, classes, mechanisms) go through
    a manifest (JSON) and come back as the same variant."""
    from ident3d.variants import get_variant, variant_from_dict

    rng = np.random.default_rng(0)
    base = get_variant("causal").to_dict()
    for trial in range(200):
        spec = json.loads(json.dumps(base))
        spec["name"] = f"random-{trial}"
        for latent in spec["latents"]:
            if "scale" in latent:
                latent["scale"] = rng.choice([float(10.0 ** rng.uniform(-8, 8)), int(rng.integers(1, 9)),
                                              "pi/2", "2pi", "1/4", f"{rng.uniform(0.001, 3):.6g}",
                                              "3e-07"])
                latent["offset"] = float(rng.normal() * 10.0 ** rng.uniform(-9, 3))
            latent["description"] = "".join(rng.choice(list("aé ≈\"'\\{}[]#=\n")) for _ in range(12)) or "d"
        variant = variant_from_dict(spec, "random spec")
        again = variant_from_dict(json.loads(json.dumps(variant.to_dict())), "random spec")
        assert again == variant, trial
        assert again.to_dict() == variant.to_dict()
