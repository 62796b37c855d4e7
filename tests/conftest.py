import hashlib
import io
import json
import os
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ident3d.synthetic import write_synthetic_split as write_fake_split  # noqa: F401 (used by tests)


@pytest.fixture(autouse=True, scope="session")
def blender_home(tmp_path_factory):
    """bpy writes into ~/.config/blender; keep tests away from the real home."""
    home = tmp_path_factory.mktemp("home")
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield Path(home)
    if old is not None:
        os.environ["HOME"] = old


def pytest_collection_modifyitems(config, items):
    import importlib.util

    no_bpy = importlib.util.find_spec("bpy") is None
    no_cuda = True
    try:
        import torch

        no_cuda = not torch.cuda.is_available()
    except ImportError:
        pass
    for item in items:
        if no_bpy and "blender" in item.keywords:
            item.add_marker(pytest.mark.skip(reason='needs bpy: pip install "ident3d[render]"'))
        if no_cuda and "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="needs CUDA"))


@pytest.fixture
def fake_split(tmp_path):
    write_fake_split(tmp_path, "train", n=50)
    return tmp_path


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
