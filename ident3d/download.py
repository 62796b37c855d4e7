"""Download the published 3DIdent from Zenodo: Range resume, MD5 checks, safe tar extraction.

The archives are ``3dident_train.tar`` and ``3dident_test.tar`` of record 4502485; each unpacks to
``3dident/<split>/`` and lands in ``<root>/<split>/``. A completion marker is written last.
"""

from __future__ import annotations

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
from ident3d.layout import SplitLayout

DEFAULT_BASE_URL = os.environ.get("IDENT3D_ZENODO_URL", "https://zenodo.org")
DEFAULT_RECORD = "4502485"
MARKER = SplitLayout("", "").download_record.name
TIMEOUT_S = 10.0
CHUNK = 1 << 20


def pinned_md5(record: str, key: str) -> str | None:
    """The MD5 that the published track pins for an archive of the published record."""
    if record != DEFAULT_RECORD:
        return None
    from ident3d.tracks import PUBLISHED, tracks

    for spec in tracks()[PUBLISHED].splits.values():
        if spec.archive == key:
            return spec.md5
    return None


def archive_name(split: str) -> str:
    return f"3dident_{split}.tar"


def fetch_record(record: str, base_url: str = DEFAULT_BASE_URL) -> dict[str, Any]:
    url = f"{base_url.rstrip('/')}/api/records/{record}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        raise DownloadError(f"cannot reach {url} ({error}). Fix: check the network, or use a mirror "
                            "(--base-url; base_url= in Python).") from error
    except json.JSONDecodeError as error:
        raise DownloadError(f"{url} did not return a Zenodo record (JSON): {error}") from error


def _file_entry(record: dict[str, Any], key: str, record_id: str) -> dict[str, Any]:
    for entry in record.get("files", []):
        if entry.get("key") == key:
            return entry
    raise DownloadError(f"record {record_id} has no file {key!r}. Fix: check the record and the split "
                        "(--record and --split; record= and split= in Python).")


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
    actual = atomic.file_digest(path, "md5")
    for want in expected:
        if actual != want:
            path.unlink()
            raise DownloadError(f"{path.name}: MD5 {actual}, expected {want}; the corrupt file was "
                                "deleted. Fix: re-run the download.")
    return actual


def _check_member(member: tarfile.TarInfo) -> None:
    """3DIdent archives hold regular files and folders only; anything else is refused by name."""
    name = member.name
    if name.startswith(("/", "\\")) or ":" in name.split("/")[0] or ".." in name.split("/"):
        raise tarfile.FilterError(f"member {name!r} has an absolute or escaping path")
    if not (member.isreg() or member.isdir()):
        kind = ("a symbolic link" if member.issym() else "a hard link" if member.islnk() else
                "a FIFO" if member.isfifo() else "a device" if member.isdev() else "not a regular file")
        raise tarfile.FilterError(f"member {name!r} is {kind}")


def _check_tree(folder: Path, root: Path) -> None:
    """After the move: every entry is a plain file or folder whose real path stays inside root."""
    real_root = root.resolve()
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise DownloadError(f"{path}: not a plain file or folder after extraction; refused.")
        if not path.resolve().is_relative_to(real_root):
            raise DownloadError(f"{path}: resolves outside {root}; refused.")


def _file_checksums(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): atomic.sha256_file(p)
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != MARKER}


def safe_extract(archive: Path, split: str, staging: Path) -> Path:
    """Extract into ``staging`` (regular files and folders only); return the split folder in it."""
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            for member in members:
                _check_member(member)
            tar.extractall(staging, members=members, filter="data")
    except (tarfile.FilterError, tarfile.TarError, OSError, EOFError) as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise DownloadError(f"{archive.name}: refused to extract ({error}). The archive is unsafe "
                            "or corrupt; nothing was written to the dataset.") from None
    _check_tree(staging, staging)
    found = [p.parent for p in staging.rglob("raw_latents.npy")]
    if len(found) != 1:
        shutil.rmtree(staging, ignore_errors=True)
        raise DownloadError(f"{archive.name}: expected one split folder with raw_latents.npy, "
                            f"found {len(found)}; nothing was written to the dataset.")
    return found[0]


def install_split(staged: Path, root: Path, split: str) -> Path:
    """Move a complete, checked split into ``<root>/<split>``; an old split there is swapped out
    atomically and deleted only after the new one is in place."""
    destination = root / split
    old = None
    if destination.exists() or destination.is_symlink():
        old = root / ".downloads" / f"replaced-{split}"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(destination, old)
    try:
        os.replace(staged, destination)
    except OSError:
        if old is not None:
            os.replace(old, destination)
        raise
    _check_tree(destination, root)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return destination


def download_split(root: Path, split: str, record: str = DEFAULT_RECORD,
                   base_url: str = DEFAULT_BASE_URL, backend: str = "builtin",
                   progress: bool = True, overwrite: bool = False) -> Path:
    """Download and unpack one split into ``<root>/<split>``; a finished download is a no-op.

    Data already at ``<root>/<split>`` is never touched unless ``overwrite``; then it is replaced
    only once the new split is downloaded, MD5-checked, extracted and checked.
    """
    root = Path(root)
    layout = SplitLayout(root, split)
    if layout.download_record.exists() and not overwrite:
        return layout.folder
    if (layout.folder.exists() or layout.folder.is_symlink()) and not overwrite:
        raise DownloadError(
            f"{layout.folder} already exists and was not made by `ident3d download`; it is left "
            f"untouched. Fix: choose another root (--data; root= in Python), or replace it once the new "
            f"download is complete and verified (--overwrite; overwrite=True in Python).")
    key = archive_name(split)
    downloads = root / ".downloads"
    archive = downloads / key
    if backend == "zenodo-get":
        from ident3d.extras import require

        require("zenodo_get").download(record=record, output_dir=downloads, file_glob=key, md5=True)
        expected = [v for v in [pinned_md5(record, key)] if v]
    elif backend == "builtin":
        record_json = fetch_record(record, base_url)
        entry = _file_entry(record_json, key, record)
        if not archive.exists():
            fetch_file(entry["links"]["self"], archive, entry.get("size"), progress)
        expected = [entry["checksum"].split(":", 1)[-1]] if entry.get("checksum") else []
        pinned = pinned_md5(record, key)
        if pinned:
            expected.append(pinned)
    else:
        raise DownloadError(f"unknown backend {backend!r}; expected 'builtin' or 'zenodo-get'")
    md5 = check_md5(archive, expected)
    staging = downloads / f"extract-{split}"
    staged = safe_extract(archive, split, staging)
    atomic.write_json(staged / MARKER, {"record": record, "base_url": base_url, "file": key, "md5": md5,
                                        "files": _file_checksums(staged)})
    folder = install_split(staged, root, split)
    shutil.rmtree(staging, ignore_errors=True)
    archive.unlink()
    return folder

