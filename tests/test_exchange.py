"""Export to Parquet (Hugging Face datasets) and WebDataset, and import back without loss."""

import io
import json
import tarfile

import numpy as np
import pytest
from conftest import write_fake_split
from PIL import Image

from ident3d.cli import main
from ident3d.datasets import ThreeDIdent
from ident3d.errors import DatasetError
from ident3d.exchange import export_split, import_split


@pytest.fixture
def split(tmp_path):
    write_fake_split(tmp_path / "data", "test", n=30, size=16, seed=3)
    return tmp_path / "data"


def assert_same_split(a_root, b_root):
    a, b = ThreeDIdent(a_root, "test"), ThreeDIdent(b_root, "test")
    assert np.array_equal(a.latents, b.latents)
    assert np.array_equal(np.load(a.layout.latents), np.load(b.layout.latents))
    for i in range(len(a)):
        assert a.image_path(i).read_bytes() == b.image_path(i).read_bytes()
    assert a.manifest == b.manifest


def test_parquet_loads_in_hugging_face_datasets_and_imports_back(split, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    shards = export_split(split, "test", tmp_path / "pq", "parquet", shard_size=12)
    assert [p.name for p in shards] == [f"test-{k:05d}-of-00003.parquet" for k in range(3)]
    hf = datasets.load_dataset("parquet", data_files=[str(p) for p in shards], split="train",
                               cache_dir=str(tmp_path / "hf-cache"))
    original = ThreeDIdent(split, "test")
    assert len(hf) == 30 and isinstance(hf[7]["image"], Image.Image)
    assert np.array_equal(np.asarray(hf[7]["image"].convert("RGB")), original.load_array(7))
    assert np.allclose(hf[7]["raw_latents"], original.latents[7])
    assert hf.features["image"].__class__.__name__ == "Image"
    assert hf[7]["caption"] == original.captions[7]  # captions and named factors travel with the images
    hue = original.factor_names.index("spotlight_hue")
    assert hf[7]["spotlight_hue"] == pytest.approx(original.latents[7, hue])
    # the folder alone loads too, both ways: the manifest sits where datasets does not look
    folder = str(tmp_path / "pq")
    for whole in (datasets.load_dataset(folder, cache_dir=str(tmp_path / "c1")),
                  datasets.load_dataset("parquet", data_dir=folder, cache_dir=str(tmp_path / "c2"))):
        assert list(whole) == ["test"] and len(whole["test"]) == 30

    assert main(["import", "--from", str(tmp_path / "pq"), "--split", "test", "--data",
                 str(tmp_path / "back")]) == 0
    assert_same_split(split, tmp_path / "back")
    back = ThreeDIdent(tmp_path / "back", "test")
    assert back.layout.captions.read_text().splitlines() == original.captions
    old = tmp_path / "pq" / "test.manifest.json"  # an export made before the manifest moved
    (tmp_path / "pq/__ident3d__/test.manifest.json").rename(old)
    assert main(["import", "--from", str(tmp_path / "pq"), "--split", "test", "--data",
                 str(tmp_path / "back-old")]) == 0
    assert_same_split(split, tmp_path / "back-old")


def test_webdataset_reads_the_shards_and_imports_back(split, tmp_path):
    wds = pytest.importorskip("webdataset")
    assert main(["export", "--data", str(split), "--split", "test", "--format", "webdataset",
                 "--out", str(tmp_path / "wds"), "--shard-size", "20", "-q"]) == 0
    urls = sorted(str(p) for p in (tmp_path / "wds").glob("*.tar"))
    samples = list(wds.WebDataset(urls, shardshuffle=False).decode("rgb8"))
    assert len(samples) == 30 and samples[4]["__key__"] == "04"
    assert np.array_equal(samples[4]["png"], ThreeDIdent(split, "test").load_array(4))
    assert np.allclose(samples[4]["raw_latents.npy"], ThreeDIdent(split, "test").latents[4])
    assert samples[4]["txt"] == ThreeDIdent(split, "test").captions[4]
    import_split(tmp_path / "wds", tmp_path / "back", "test")
    assert_same_split(split, tmp_path / "back")
    assert ThreeDIdent(tmp_path / "back", "test").layout.captions.exists()


def tamper(tar_path, change):
    members = []
    with tarfile.open(tar_path) as tar:
        for m in tar:
            members.append((m, tar.extractfile(m).read()))
    with tarfile.open(tar_path, "w") as tar:
        for m, data in change(members):
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)


def test_crafted_or_damaged_shards_are_refused_and_nothing_is_written(split, tmp_path):
    export_split(split, "test", tmp_path / "wds", "webdataset", shard_size=30)
    shard = next((tmp_path / "wds").glob("*.tar"))

    def flip_png(members):
        return [(m, data[:-20] + bytes(20) if m.name == "05.png" else data) for m, data in members]

    tamper(shard, flip_png)
    with pytest.raises(DatasetError, match="image 05.png differs from the manifest"):
        import_split(tmp_path / "wds", tmp_path / "back", "test")

    def add_link(members):
        link = tarfile.TarInfo("06.png")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        return [(m, d) for m, d in members if m.name != "06.png"] + [(link, b"")]

    tamper(shard, add_link)
    with pytest.raises(DatasetError, match="member '06.png' is not part of an ident3d export"):
        import_split(tmp_path / "wds", tmp_path / "back", "test")
    assert not (tmp_path / "back").exists()

    (tmp_path / "busy/test").mkdir(parents=True)
    (tmp_path / "busy/test/mine.txt").write_text("someone's data")
    export_split(split, "test", tmp_path / "pq", "parquet")
    with pytest.raises(DatasetError, match="already holds files"):
        import_split(tmp_path / "pq", tmp_path / "busy", "test")
    assert [p.name for p in (tmp_path / "busy/test").iterdir()] == ["mine.txt"]
    with pytest.raises(DatasetError, match="already exists"):
        export_split(split, "test", tmp_path / "pq", "parquet")
    assert json.loads((tmp_path / "pq/__ident3d__/test.manifest.json").read_text())["n"] == 30


def test_a_crafted_parquet_shard_or_manifest_is_one_clear_error(split, tmp_path):
    export_split(split, "test", tmp_path / "pq", "parquet")
    shard = next((tmp_path / "pq").glob("*.parquet"))
    shard.write_bytes(b"PAR1 not really parquet PAR1")
    with pytest.raises(DatasetError, match="not a Parquet shard of an ident3d export"):
        import_split(tmp_path / "pq", tmp_path / "back", "test")
    manifest = json.loads((tmp_path / "pq/__ident3d__/test.manifest.json").read_text())
    manifest["padding"] = "ten"
    (tmp_path / "pq/__ident3d__/test.manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match="field padding"):
        import_split(tmp_path / "pq", tmp_path / "back", "test")
    assert not (tmp_path / "back").exists()


@pytest.mark.parametrize("fmt", ["parquet", "webdataset"])
def test_a_split_of_another_variant_round_trips_with_its_latent_count(fmt, tmp_path):
    pytest.importorskip("pyarrow" if fmt == "parquet" else "webdataset")
    write_fake_split(tmp_path / "data", "test", n=10, size=8, seed=2, variant="objects")
    export_split(tmp_path / "data", "test", tmp_path / "out", fmt)
    import_split(tmp_path / "out", tmp_path / "back", "test")
    assert_same_split(tmp_path / "data", tmp_path / "back")
    assert ThreeDIdent(tmp_path / "back", "test").latents.shape == (10, 11)
    if fmt == "parquet":  # the class latent is a class label with its names
        datasets = pytest.importorskip("datasets")
        hf = datasets.load_dataset(str(tmp_path / "out"), split="test", cache_dir=str(tmp_path / "hf"))
        labels = hf.features["object_class"]
        assert labels.__class__.__name__ == "ClassLabel" and len(labels.names) >= 2
        assert hf[3]["object_class"] == int(ThreeDIdent(tmp_path / "data", "test").latents[3, -1])
