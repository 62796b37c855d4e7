"""Downloads against a real HTTP server on 127.0.0.1 serving a fake Zenodo record."""

import io
import json
import socket
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest
from conftest import FakeZenodo, make_tar, write_fake_split

from ident3d.datasets import ThreeDIdent
from ident3d.download import MARKER, download_split
from ident3d.errors import DownloadError


@pytest.fixture
def archive(tmp_path):
    write_fake_split(tmp_path / "src" / "3dident", "test", n=20, manifest=False)
    # Padding bytes make the archive large enough for a mid-file drop to matter.
    (tmp_path / "src/3dident/test/padding.bin").write_bytes(np.random.default_rng(0).bytes(200_000))
    return make_tar(tmp_path / "src/3dident", "3dident")


def test_download_resume_and_load(tmp_path, archive):
    server = FakeZenodo({"3dident_test.tar": archive})
    server.drop_first.add("3dident_test.tar")
    root = tmp_path / "data"
    try:
        with pytest.raises(DownloadError, match="re-run"):
            download_split(root, "test", record="999", base_url=server.url, progress=False)
        assert not (root / "test" / MARKER).exists()
        download_split(root, "test", record="999", base_url=server.url, progress=False)
    finally:
        server.close()
    assert server.bytes_sent < 2 * len(archive)  # the second request resumed, it did not restart
    assert server.bytes_sent == len(archive)
    assert json.loads((root / "test" / MARKER).read_text())["record"] == "999"
    ds = ThreeDIdent(root, "test")
    assert len(ds) == 20 and ds[3][0].size == (16, 16)
    assert not (root / ".downloads" / "3dident_test.tar").exists()


def test_md5_mismatch_leaves_no_marker(tmp_path, archive):
    server = FakeZenodo({"3dident_test.tar": archive}, md5={"3dident_test.tar": "0" * 32})
    try:
        with pytest.raises(DownloadError, match="MD5"):
            download_split(tmp_path, "test", record="999", base_url=server.url, progress=False)
    finally:
        server.close()
    assert not (tmp_path / "test" / MARKER).exists() and not (tmp_path / "test").exists()


def test_pinned_checksum_of_the_published_record_is_enforced(tmp_path, archive):
    server = FakeZenodo({"3dident_test.tar": archive}, record="4502485")
    try:
        with pytest.raises(DownloadError, match="35020bca16c9faa80cf0c926d265d678"):
            download_split(tmp_path, "test", base_url=server.url, progress=False)
    finally:
        server.close()


@pytest.mark.parametrize("evil", ["../escape.txt", "/tmp/ident3d-absolute.txt"])
def test_unsafe_tar_is_refused(tmp_path, evil):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(evil)
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    server = FakeZenodo({"3dident_test.tar": buffer.getvalue()})
    root = tmp_path / "data"
    try:
        with pytest.raises(DownloadError, match="refused to extract"):
            download_split(root, "test", record="999", base_url=server.url, progress=False)
    finally:
        server.close()
    assert not (tmp_path / "escape.txt").exists() and not (root / "escape.txt").exists()
    assert not (root / "test" / MARKER).exists()


def test_closed_port_fails_fast_with_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "download", "--root",
                             str(tmp_path), "--split", "test", "--base-url",
                             f"http://127.0.0.1:{port}"], capture_output=True, text=True)
    assert time.perf_counter() - start < 30
    assert result.returncode == 1 and "cannot reach" in result.stderr


@pytest.mark.slow
def test_verify_reports_problems(tmp_path):
    write_fake_split(tmp_path, "train", n=30)
    cli = [sys.executable, "-m", "ident3d.cli", "audit", str(tmp_path)]
    ok = subprocess.run(cli, capture_output=True, text=True)
    assert ok.returncode == 0 and "30 images checked, 0 problems" in ok.stdout
    (tmp_path / "train/images/07.png").write_bytes(b"garbage")
    (tmp_path / "train/images/12.png").unlink()
    bad = subprocess.run(cli, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "07.png: cannot be decoded" in bad.stdout and "12.png: missing" in bad.stdout
    assert "29 PNG files, expected 30" in bad.stdout


def test_an_existing_split_is_never_replaced_and_overwrite_swaps_only_after_success(tmp_path, archive):
    root = tmp_path / "data"
    write_fake_split(root, "test", n=7)  # the user's own renders
    before = sorted((p.name, p.read_bytes()) for p in (root / "test").rglob("*") if p.is_file())
    bad = FakeZenodo({"3dident_test.tar": archive}, md5={"3dident_test.tar": "0" * 32})
    good = FakeZenodo({"3dident_test.tar": archive})
    try:
        with pytest.raises(DownloadError, match="already exists") as refused:
            download_split(root, "test", record="999", base_url=good.url, progress=False)
        assert "root= in Python" in str(refused.value) and "overwrite=True in Python" in str(refused.value)
        with pytest.raises(DownloadError, match="MD5"):  # a failed overwrite keeps the old split
            download_split(root, "test", record="999", base_url=bad.url, progress=False, overwrite=True)
        after = sorted((p.name, p.read_bytes()) for p in (root / "test").rglob("*") if p.is_file())
        assert after == before
        download_split(root, "test", record="999", base_url=good.url, progress=False, overwrite=True)
    finally:
        bad.close()
        good.close()
    assert len(ThreeDIdent(root, "test")) == 20
    assert not (root / ".downloads" / "replaced-test").exists()


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "device"])
def test_links_devices_and_fifos_are_refused_and_nothing_lands(tmp_path, kind):
    from hostile import tar_with

    server = FakeZenodo({"3dident_test.tar": tar_with(kind)})
    try:
        with pytest.raises(DownloadError, match=f"is a {'FIFO' if kind == 'fifo' else ''}"):
            download_split(tmp_path, "test", record="999", base_url=server.url, progress=False)
    finally:
        server.close()
    assert not (tmp_path / "test").exists()


def test_only_a_split_with_the_pinned_content_hash_counts_as_published(tmp_path, archive, monkeypatch):
    import dataclasses

    from ident3d import tracks
    from ident3d.evaluation import evaluate
    from ident3d.layout import SplitLayout

    # Without a manifest a split is custom data, whatever its layout looks like.
    write_fake_split(tmp_path / "mine", "test", n=20, manifest=False)
    np.save(tmp_path / "z.npy", np.load(tmp_path / "mine/test/raw_latents.npy"))
    mine = evaluate(tmp_path / "z.npy", tmp_path / "mine", progress=False).document
    assert mine["dataset"]["track"].startswith("custom:")

    server = FakeZenodo({"3dident_test.tar": archive})
    try:
        download_split(tmp_path / "pub", "test", record="999", base_url=server.url, progress=False)
    finally:
        server.close()
    layout = SplitLayout(tmp_path / "pub", "test")
    published = tracks.get_track(tracks.PUBLISHED)
    unpinned = dataclasses.replace(published, splits={
        **published.splits, "test": dataclasses.replace(published.splits["test"], n=20)})
    # This version pins no content hash (no machine of the project reached Zenodo): nothing verifies.
    [found] = tracks.differences(unpinned, layout)
    assert "pins no content hash" in found and tracks.content_sha256(layout, 20) in found

    # The real archive is 25,000 images; this stands in for it by pinning the fake one's content.
    test_spec = dataclasses.replace(unpinned.splits["test"],
                                    content_sha256=tracks.content_sha256(layout, 20))
    pinned = dataclasses.replace(published, splits={**published.splits, "test": test_spec})
    known = {**tracks.tracks(), tracks.PUBLISHED: pinned}
    monkeypatch.setattr(tracks.registry, "tracks", lambda: known)
    assert tracks.differences(pinned, layout) == []
    layout.download_record.unlink()  # the record is a convenience, never the evidence
    assert tracks.differences(pinned, layout) == []
    np.save(tmp_path / "z.npy", np.load(layout.raw_latents))
    assert evaluate(tmp_path / "z.npy", tmp_path / "pub", progress=False).document["dataset"]["track"] \
        == "3dident-published@1"

    image = layout.image(7, 2)
    image.write_bytes(image.read_bytes() + b"\0")  # one changed file: no longer the published data
    [found] = tracks.differences(pinned, layout)
    assert found.startswith("content: sha256 ")
    # ... and a hand-written download record for other files changes nothing either.
    (tmp_path / "forged/test/images").mkdir(parents=True)
    write_fake_split(tmp_path / "forged", "test", n=20, manifest=False, seed=1)
    (tmp_path / "forged/test/.download-complete.json").write_text(json.dumps(
        {"md5": published.splits["test"].md5, "files": {}}))
    assert tracks.differences(pinned, SplitLayout(tmp_path / "forged", "test"))[0].startswith("content:")


def test_the_fix_for_a_broken_downloaded_split_is_a_command_that_works(tmp_path, archive):
    import shlex

    server = FakeZenodo({"3dident_test.tar": archive})
    root = tmp_path / "data"
    try:
        download_split(root, "test", record="999", base_url=server.url, progress=False)
        good = np.asarray(ThreeDIdent(root, "test").load_array(4))
        (root / "test/images/04.png").write_bytes(b"broken")
        with pytest.raises(Exception, match="--overwrite") as error:
            ThreeDIdent(root, "test").load_array(4)
        command = str(error.value).split("`")[1]
        fixed = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", *shlex.split(command)[1:]],
                               capture_output=True, text=True)
    finally:
        server.close()
    assert fixed.returncode == 0, fixed.stderr
    np.testing.assert_array_equal(ThreeDIdent(root, "test").load_array(4), good)
