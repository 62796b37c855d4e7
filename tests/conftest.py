import hashlib
import io
import json
import os
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


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


def write_fake_split(root: Path, split: str = "train", n: int = 50, size: int = 16,
                     manifest: bool = True, seed: int = 0) -> Path:
    """A tiny but real on-disk split without Blender: each image's colours encode its latents."""
    import numpy as np
    from PIL import Image

    from ident3d import atomic
    from ident3d.latents import sample_uniform
    from ident3d.layout import SplitLayout, padding_width
    from ident3d.manifest import build_manifest, channel_stats

    lay = SplitLayout(Path(root), split)
    lay.images.mkdir(parents=True, exist_ok=True)
    z = sample_uniform(n, seed)
    np.save(lay.raw_latents, z)
    np.save(lay.latents, z * 3)
    width = padding_width(n)
    rng = np.random.default_rng(seed)
    for i in range(n):
        base = ((z[i, :3] + 1) * 127.5)[None, None, :]
        noise = rng.integers(0, 8, size=(size, size, 3))
        Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8)).save(lay.image(i, width))
    if manifest:
        paths = [lay.image(i, width) for i in range(n)]
        mean, std = channel_stats(paths)
        atomic.write_json(lay.manifest, build_manifest(
            variant="v2", n=n, padding=width, renderer={"name": "test-fixture"}, settings={},
            seeds={"latents": seed}, latents_sha256=atomic.sha256_array(z),
            files={p.name: atomic.sha256_file(p) for p in paths}, image_mean=mean, image_std=std))
    return lay.folder


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
