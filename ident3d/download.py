"""Download the published 3DIdent from Zenodo: Range resume, MD5 checks, safe tar extraction.

The archives are ``3dident_train.tar`` and ``3dident_test.tar`` of record 4502485; each unpacks to
``3dident/<split>/`` and lands in ``<root>/<split>/``. A completion marker is written last.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ident3d import atomic
from ident3d.errors import DownloadError

DEFAULT_BASE_URL = os.environ.get("IDENT3D_ZENODO_URL", "https://zenodo.org")
DEFAULT_RECORD = "4502485"
# MD5 sums of record 4502485 (REFERENCE.md section 4), checked besides the record's own.
PINNED_MD5 = {
    "4502485": {"3dident_train.tar": "df132b4dacf04fa28e1c8ca9d2168634",
                "3dident_test.tar": "35020bca16c9faa80cf0c926d265d678"},
}
MARKER = ".download-complete.json"
TIMEOUT_S = 10.0
CHUNK = 1 << 20


def archive_name(split: str) -> str:
    return f"3dident_{split}.tar"


def fetch_record(record: str, base_url: str = DEFAULT_BASE_URL) -> dict[str, Any]:
    url = f"{base_url.rstrip('/')}/api/records/{record}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        raise DownloadError(f"cannot reach {url} ({error}). Fix: check the network, or pass "
                            "--base-url for a mirror.") from error
    except json.JSONDecodeError as error:
        raise DownloadError(f"{url} did not return a Zenodo record (JSON): {error}") from error


def _file_entry(record: dict[str, Any], key: str, record_id: str) -> dict[str, Any]:
    for entry in record.get("files", []):
        if entry.get("key") == key:
            return entry
    raise DownloadError(f"record {record_id} has no file {key!r}. Fix: check --record and --split.")


def md5_file(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def fetch_file(url: str, target: Path, size: int | None, progress: bool = True) -> Path:
    """Download ``url`` to ``target`` via ``target.part``, resuming a partial file with HTTP Range."""
    part = target.with_name(target.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as error:
        if error.code == 416 and size is not None and have == size:  # already complete
            os.replace(part, target)
            return target
        raise DownloadError(f"{url}: HTTP {error.code} {error.reason}") from error
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        raise DownloadError(f"cannot reach {url} ({error}). Fix: check the network; re-running "
                            "resumes the partial download.") from error
    with response:
        if have and response.status != 206:
            have = 0  # the server ignored Range: start again
        mode = "ab" if have else "wb"
        with open(part, mode) as f, tqdm(total=size, initial=have, unit="B", unit_scale=True,
                                          unit_divisor=1024, desc=target.name,
                                          disable=not progress) as bar:
            try:
                while block := response.read(CHUNK):
                    f.write(block)
                    bar.update(len(block))
            except (OSError, TimeoutError, http.client.HTTPException) as error:
                raise DownloadError(f"{url}: connection lost after {part.stat().st_size} bytes "
                                    f"({error}). Fix: re-run the same command to resume.") from error
    got = part.stat().st_size
    if size is not None and got != size:
        raise DownloadError(f"{url}: received {got} of {size} bytes. Fix: re-run to resume.")
    os.replace(part, target)
    return target


def check_md5(path: Path, expected: list[str]) -> str:
    actual = md5_file(path)
    for want in expected:
        if actual != want:
            path.unlink()
            raise DownloadError(f"{path.name}: MD5 {actual}, expected {want}; the corrupt file was "
                                "deleted. Fix: re-run the download.")
    return actual


def safe_extract(archive: Path, split: str, root: Path) -> Path:
    """Extract with tarfile's ``data`` filter (no absolute paths, no ``..``, no escaping links)."""
    staging = root / ".downloads" / f"extract-{split}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                # The data filter would silently strip a leading "/"; refuse such archives instead.
                if member.name.startswith(("/", "\\")) or ":" in member.name.split("/")[0]:
                    raise tarfile.FilterError(f"absolute path {member.name!r}")
            tar.extractall(staging, filter="data")
    except (tarfile.FilterError, tarfile.TarError) as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise DownloadError(f"{archive.name}: refused to extract ({error}). The archive is unsafe "
                            "or corrupt; nothing was written to the dataset.") from error
    found = [p.parent for p in staging.rglob("raw_latents.npy")]
    if len(found) != 1:
        raise DownloadError(f"{archive.name}: expected one split folder with raw_latents.npy, "
                            f"found {len(found)}.")
    destination = root / split
    if destination.exists():
        shutil.rmtree(destination)
    os.replace(found[0], destination)
    shutil.rmtree(staging, ignore_errors=True)
    return destination


def download_split(root: Path, split: str, record: str = DEFAULT_RECORD,
                   base_url: str = DEFAULT_BASE_URL, backend: str = "builtin",
                   progress: bool = True) -> Path:
    """Download and unpack one split into ``<root>/<split>``; a finished split is a no-op."""
    root = Path(root)
    marker = root / split / MARKER
    if marker.exists():
        return root / split
    key = archive_name(split)
    downloads = root / ".downloads"
    archive = downloads / key
    if backend == "zenodo-get":
        from ident3d.extras import require

        require("zenodo_get").download(record=record, output_dir=downloads, file_glob=key, md5=True)
        expected = [v for v in [PINNED_MD5.get(record, {}).get(key)] if v]
    elif backend == "builtin":
        record_json = fetch_record(record, base_url)
        entry = _file_entry(record_json, key, record)
        if not archive.exists():
            fetch_file(entry["links"]["self"], archive, entry.get("size"), progress)
        expected = [entry["checksum"].split(":", 1)[-1]] if entry.get("checksum") else []
        pinned = PINNED_MD5.get(record, {}).get(key)
        if pinned:
            expected.append(pinned)
    else:
        raise DownloadError(f"unknown backend {backend!r}; expected 'builtin' or 'zenodo-get'")
    md5 = check_md5(archive, expected)
    folder = safe_extract(archive, split, root)
    archive.unlink()
    atomic.write_json(marker, {"record": record, "file": key, "md5": md5})
    return folder
