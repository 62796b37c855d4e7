import fcntl
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# `make test` runs one pytest-xdist worker per core (whole files per worker: module fixtures are made
# once). Each worker, and every process it starts, computes on one thread: two workers of two torch or
# BLAS threads each would fight over the cores. Set before numpy or torch is first imported.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"

from ident3d.fake_splits import write_fake_split  # noqa: E402, F401 (used by tests; after the threads)

REPO = Path(__file__).resolve().parents[1]
# Renders kept across test runs live beside the user's own cache, found before the session moves HOME
TEST_CACHE = Path(os.environ.get("IDENT3D_TEST_CACHE") or Path.home() / ".cache" / "ident3d-tests")
# Everything that decides a rendered track split's pixels: the mapping from latents to the scene, the
# sampling, the variant specs, the track table, the renderer, and the versions of Blender and numpy.
PIXEL_SOURCES = ("render/**/*.py", "render/data/**/*", "ident3d/scene.py", "ident3d/latents.py",
                 "ident3d/regions.py", "ident3d/variants/*", "ident3d/tracks.toml")


def pixel_key() -> str:
    """A hash of ``PIXEL_SOURCES`` and the bpy and numpy versions: a cached render is reused only
    while nothing that determines its pixels has changed."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    for pattern in PIXEL_SOURCES:
        for path in sorted(p for p in REPO.glob(pattern) if p.is_file() and "__pycache__" not in p.parts):
            digest.update(f"{path.relative_to(REPO)}\0".encode() + path.read_bytes())
    for dist in ("bpy", "numpy"):
        try:
            digest.update(f"{dist}={version(dist)}".encode())
        except PackageNotFoundError:
            digest.update(f"{dist}=none".encode())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def cpu_track_data(blender_home) -> Path:
    """A dataset root holding the CPU track's test split (3dident-v2-64@1, 5,000 images), rendered
    once and kept across runs under ``pixel_key()``. Read-only: copy it before changing anything.
    Whoever uses it as the track still proves it (``audit --track`` re-renders a random sample)."""
    import importlib.util

    if importlib.util.find_spec("bpy") is None:  # never imported here: bpy puts its own folders on
        pytest.skip('needs bpy: pip install "ident3d[render]"')  # sys.path, which render workers inherit
    cached = TEST_CACHE / f"cpu-track-{pixel_key()}"
    TEST_CACHE.mkdir(parents=True, exist_ok=True)
    with open(TEST_CACHE / ".lock", "w") as lock:  # pytest-xdist workers: one renders, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cached / "test/manifest.json").exists():
            from ident3d.render.job import plan_track_job, render_split
            from ident3d.tracks import get_track

            building = TEST_CACHE / f".cpu-track-{os.getpid()}"
            shutil.rmtree(building, ignore_errors=True)
            render_split(plan_track_job(building, get_track("3dident-v2-64"), "test"), workers=2,
                         progress=False)
            shutil.rmtree(cached, ignore_errors=True)  # a half-copied earlier attempt
            os.rename(building, cached)
            # Renders of other code go once unused for a week (another checkout may be reading one now).
            for stale in TEST_CACHE.glob("cpu-track-*"):
                if stale != cached and time.time() - stale.stat().st_mtime > 7 * 86400:
                    shutil.rmtree(stale, ignore_errors=True)
        os.utime(cached)  # last used now
    return cached


@pytest.fixture(scope="session")
def committed_entries():
    """Every committed leaderboard entry, loaded and validated once per run. Read-only."""
    from ident3d.leaderboard.entries import load_entries

    return tuple(load_entries())


@pytest.fixture(autouse=True, scope="session")
def blender_home(tmp_path_factory):
    """bpy writes into ~/.config/blender; keep tests away from the real home."""
    home = tmp_path_factory.mktemp("home")
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield Path(home)
    if old is not None:
        os.environ["HOME"] = old


def pytest_configure(config):
    """A run that excludes the ``blender`` marker hides bpy (tests/without_blender), in this process
    and in every process it starts, so an unmarked test that renders fails instead of slowing it."""
    if "not blender" in (config.getoption("markexpr") or ""):
        guard = str(Path(__file__).resolve().parent / "without_blender")
        sys.path.insert(0, guard)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [guard, os.environ.get("PYTHONPATH")]))


# The files that take longest (pytest's --durations) start first, so that no worker is left alone
# with one of them at the end of the run (the Makefile keeps xdist from reordering files by size).
LONGEST_FIRST = ("test_readme.py", "test_fresh.py", "test_train.py", "test_experiment.py", "test_demo.py")


def pytest_collection_modifyitems(config, items):
    import importlib.util

    no_bpy = importlib.util.find_spec("bpy") is None
    no_cuda = True
    try:
        import torch

        no_cuda = not torch.cuda.is_available()
    except ImportError:
        pass
    items.sort(key=lambda item: LONGEST_FIRST.index(item.path.name) if item.path.name in LONGEST_FIRST
               else len(LONGEST_FIRST))  # stable: each file keeps its own order
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


def processes_in_group(group: int) -> list[str]:
    """Command lines of the live processes whose process group is ``group``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:120])
    return found
