"""``ident3d publish``: a bundle of real rendered splits validates as Croissant 1.1 the way the
NeurIPS 2026 validator checks it (the JSON parses, ``mlcroissant`` loads it without errors, the first
record of every record set is produced), its records are the split's, and ``datasets`` loads it
through the card's ``configs``."""

import hashlib
import json
import logging
import os
import stat

import numpy as np
import pytest

from ident3d.cli import main
from ident3d.datasets import ThreeDIdent
from ident3d.errors import DatasetError
from ident3d.publish import publish
from ident3d.tracks import get_track

pytestmark = [pytest.mark.blender, pytest.mark.slow]
SECTIONS = ["Motivation", "Composition", "Collection process", "Preprocessing, cleaning, labeling", "Uses",
            "Distribution", "Maintenance"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Two real splits (6 test, 8 train images at 32 px) and an `objects` split with a class latent."""
    root = tmp_path_factory.mktemp("publish")
    for split, n, seed in (("test", 6, 1), ("train", 8, 0)):
        assert main(["render", "--data", str(root / "v2"), "--split", split, "--n", str(n), "--seed",
                     str(seed), "--resolution", "32", "--preset", "preview", "--samples", "1", "-q"]) == 0
    assert main(["render", "--data", str(root / "objects"), "--split", "test", "--n", "4", "--variant",
                 "objects", "--resolution", "32", "--preset", "preview", "--samples", "1", "-q"]) == 0
    return root


@pytest.fixture(scope="module")
def bundle(data):
    out = data / "bundle"
    assert main(["publish", "--data", str(data / "v2"), "--out", str(out), "--shard-size", "5"]) == 0
    return out


def records(croissant_path, record_set):
    mlc = pytest.importorskip("mlcroissant")
    return list(mlc.Dataset(jsonld=str(croissant_path)).records(record_set=record_set))


def test_bundle_passes_the_croissant_validators_three_checks(bundle):
    mlc = pytest.importorskip("mlcroissant")
    metadata = json.loads((bundle / "croissant.json").read_text())  # 1. the JSON parses
    assert metadata["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    dataset = mlc.Dataset(jsonld=str(bundle / "croissant.json"))  # 2. mlcroissant loads it
    assert not dataset.metadata.ctx.issues.errors, dataset.metadata.ctx.issues.report()
    assert not dataset.metadata.ctx.issues.warnings, dataset.metadata.ctx.issues.report()
    for record_set in dataset.metadata.record_sets:  # 3. each record set produces its first record
        assert next(iter(dataset.records(record_set=record_set.uuid)))
    assert metadata["rai:personalSensitiveInformation"].startswith("None")
    assert metadata["rai:dataLimitations"] and metadata["license"].startswith("https://creativecommons")


def test_croissant_records_are_the_splits_images_latents_and_captions(bundle, data):
    got = records(bundle / "croissant.json", "images")
    assert sorted(r["images/split"].decode() for r in got) == ["test"] * 6 + ["train"] * 8
    splits = {name: ThreeDIdent(data / "v2", name) for name in ("test", "train")}
    factor = splits["test"].factor_names.index("spotlight_hue")
    for record in got:
        split = splits[record["images/split"].decode()]
        i = record["images/index"]
        assert np.array_equal(np.asarray(record["images/image"].convert("RGB")), split.load_array(i))
        assert np.array_equal(np.asarray(record["images/raw_latents"], dtype=np.float32), split.latents[i])
        assert record["images/caption"].decode() == split.captions[i]
        assert record["images/spotlight_hue"] == pytest.approx(split.latents[i, factor])
    assert [r["splits/name"] for r in records(bundle / "croissant.json", "splits")] == ["test", "train"]


def test_every_shard_is_listed_with_its_sha256(bundle):
    metadata = json.loads((bundle / "croissant.json").read_text())
    listed = {f["contentUrl"]: f["sha256"] for f in metadata["distribution"] if f["@type"] == "cr:FileObject"}
    shards = sorted(p.relative_to(bundle).as_posix() for p in (bundle / "data").glob("*.parquet"))
    assert sorted(listed) == shards and len(shards) == 4  # 6 + 8 images in shards of 5
    for path, digest in listed.items():
        assert hashlib.sha256((bundle / path).read_bytes()).hexdigest() == digest


def test_bundle_loads_with_datasets_through_the_cards_configs(bundle, data, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    hub = pytest.importorskip("huggingface_hub")
    card = hub.DatasetCard.load(bundle / "README.md")
    assert card.data.license == "cc-by-4.0" and card.data.size_categories == ["n<1K"]
    assert card.data.pretty_name and "## Known limitations" in card.text
    for config in card.data.configs:
        files = {f["split"]: str(bundle / f["path"]) for f in config["data_files"]}
        loaded = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "c1"))
        assert {k: len(v) for k, v in loaded.items()} == {"test": 6, "train": 8}
    whole = datasets.load_dataset(str(bundle), cache_dir=str(tmp_path / "c2"))  # the card's YAML is read
    original = ThreeDIdent(data / "v2", "train")
    assert whole["train"][3]["caption"] == original.captions[3]
    assert np.array_equal(np.asarray(whole["train"][3]["image"].convert("RGB")), original.load_array(3))
    pq = pytest.importorskip("pyarrow.parquet")
    shard = next((bundle / "data").glob("train-*.parquet"))
    info = json.loads(pq.read_schema(shard).metadata[b"huggingface"])
    assert info["info"]["license"] == "CC-BY-4.0" and "zimmermann2021" in info["info"]["citation"]
    assert info["info"]["description"] and info["info"]["homepage"].startswith("https://")


def test_datasheet_answers_the_seven_sections_from_the_same_facts(bundle):
    sheet = (bundle / "DATASHEET.md").read_text()
    assert [line[3:] for line in sheet.splitlines() if line.startswith("## ")] == SECTIONS
    card = (bundle / "README.md").read_text()
    assert "14 (test: 6 images; train: 8 images)" in sheet
    assert "| `train` | 8 |" in card


def test_class_latents_publish_as_class_labels(data, tmp_path):
    facts = publish(data / "objects", tmp_path / "objects")
    (shape,) = [f for f in facts.variant.factors if f.is_class]
    card = (tmp_path / "objects/README.md").read_text()
    assert "class_label:" in card and all(f'"{c}"' in card for c in shape.classes)
    got = records(tmp_path / "objects/croissant.json", "images")
    split = ThreeDIdent(data / "objects", "test")
    classes = sorted(int(v) for v in split.latents[:, shape.index])
    assert sorted(r[f"images/{shape.name}"] for r in got) == classes


def test_publish_refuses_a_used_folder_and_a_split_that_is_not_the_track(data, tmp_path, capsys):
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine")
    assert main(["publish", "--data", str(data / "v2"), "--out", str(used)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "already holds files" in err[0]
    assert [p.name for p in used.iterdir()] == ["notes.txt"] and (used / "notes.txt").read_text() == "mine"
    with pytest.raises(DatasetError, match="not the test split of track 3dident-v2-64@1.*Fix:"):
        publish(data / "v2", tmp_path / "new", ["test"], get_track("3dident-v2-64"))
    assert not (tmp_path / "new").exists() and not list(tmp_path.glob(".new.publishing.*"))


def test_legacy_colours_are_a_stated_limitation(data, tmp_path):
    from ident3d.publish.facts import BundleFacts
    from ident3d.variants import get_variant

    facts = BundleFacts(name="x", title="x", description="x", variant=get_variant("legacy"), resolution=64,
                        render={"samples": 4, "denoise": False}, renderer="r", splits=(),
                        rendered_by_ident3d=False)
    said = " ".join(facts.limitations)
    assert "clamped" in said and "no denoising" in said and "64 x 64" in said
    assert facts.license is None and "states no licence" in facts.license_text
    logging.getLogger(__name__).info(said)


def test_the_bundle_folder_has_the_usual_mode_for_sharing(bundle):
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o777 & ~umask  # not mkdtemp's private 0700
