"""Downloads against a real HTTP server on 127.0.0.1 serving a fake Zenodo record."""

import hashlib
import io
import json
import socket
import subprocess
import sys
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from conftest import write_fake_split

from ident3d.datasets import ThreeDIdent
from ident3d.download import MARKER, download_split
from ident3d.errors import DownloadError


def make_tar(folder: Path, arcname: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=arcname)
    return buffer.getvalue()


class FakeZenodo:
    def __init__(self, files: dict[str, bytes], record: str = "999", md5: dict | None = None):
        self.files, self.record = files, record
        self.md5 = md5 or {k: hashlib.md5(v).hexdigest() for k, v in files.items()}
        self.drop_first = set()
        self.bytes_sent = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == f"/api/records/{fake.record}":
                    body = json.dumps({"id": fake.record, "files": [
                        {"key": k, "size": len(v), "checksum": f"md5:{fake.md5[k]}",
                         "links": {"self": f"{fake.url}/files/{k}"}}
                        for k, v in fake.files.items()]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                key = self.path.rsplit("/", 1)[-1]
                data = fake.files[key]
                start = 0
                if "Range" in self.headers:
                    start = int(self.headers["Range"].split("=")[1].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                payload = data[start:]
                if key in fake.drop_first:
                    fake.drop_first.discard(key)
                    payload = payload[: len(payload) // 2]
                    self.close_connection = True
                self.wfile.write(payload)
                fake.bytes_sent += len(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


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


def test_verify_reports_problems(tmp_path):
    write_fake_split(tmp_path, "train", n=30)
    cli = [sys.executable, "-m", "ident3d.cli", "verify", str(tmp_path)]
    ok = subprocess.run(cli, capture_output=True, text=True)
    assert ok.returncode == 0 and "30 images checked, 0 problems" in ok.stdout
    (tmp_path / "train/images/07.png").write_bytes(b"garbage")
    (tmp_path / "train/images/12.png").unlink()
    bad = subprocess.run(cli, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "07.png: cannot be decoded" in bad.stdout and "12.png: missing" in bad.stdout
    assert "29 PNG files, expected 30" in bad.stdout
