"""Where each file of a dataset split lives (docs/dataset-card.md).

``<root>/<split>/images/<index>.png``, ``raw_latents.npy``, ``latents.npy``, ``captions.txt``,
``manifest.json``, plus ``images.npy`` once packed and ``render_job.json`` / ``shards/`` while rendering.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path


def padding_width(n: int) -> int:
    """Digits in image names: ceil(log10 N) as in the published dataset (at least 1)."""
    return max(1, math.ceil(math.log10(n))) if n > 0 else 1


def splits_under(root: Path | str, splits: list[str] | None = None) -> list[str]:
    """``splits`` when given, else the names of the rendered splits under ``root`` (folders holding
    raw_latents.npy); a DatasetError that says what is wrong with ``root`` when there is none."""
    from ident3d.errors import DatasetError

    root = Path(root)
    if (root / "raw_latents.npy").exists():  # a split folder given where its dataset root was meant
        with_split = "" if splits else f" (with --split {root.name})"
        raise DatasetError(f"{root}: this is the split {root.name!r} itself, not a dataset root. Fix: pass "
                           f"its parent, --data {root.parent}{with_split}.")
    found = splits or sorted(p.parent.name for p in root.glob("*/raw_latents.npy"))
    if found:
        return found
    if not root.exists():
        raise DatasetError(f"{root}: no such folder. Fix: pass the dataset root, the folder that holds "
                           "train/ and test/ (ident3d render or ident3d download writes one).")
    raise DatasetError(f"{root}: no split found (no */raw_latents.npy). Fix: pass the dataset root, the "
                       "folder that holds train/ and test/.")


@dataclass(frozen=True)
class SplitLayout:
    root: Path
    split: str

    @property
    def folder(self) -> Path:
        return Path(self.root) / self.split

    @property
    def images(self) -> Path:
        return self.folder / "images"

    @property
    def raw_latents(self) -> Path:
        return self.folder / "raw_latents.npy"

    @property
    def latents(self) -> Path:
        return self.folder / "latents.npy"

    @property
    def captions(self) -> Path:
        return self.folder / "captions.txt"

    @property
    def manifest(self) -> Path:
        return self.folder / "manifest.json"

    @property
    def packed(self) -> Path:
        return self.folder / "images.npy"

    @property
    def render_job(self) -> Path:
        return self.folder / "render_job.json"

    @property
    def shards(self) -> Path:
        return self.folder / "shards"

    @property
    def download_record(self) -> Path:
        """Written by ``ident3d download`` once the split is extracted and its checksums are known."""
        return self.folder / ".download-complete.json"

    def image(self, index: int, width: int) -> Path:
        return self.images / f"{index:0{width}d}.png"

    def _source(self) -> str:
        """The --record and --base-url a download came from, when they are not the defaults."""
        try:
            record = json.loads(self.download_record.read_text())
        except (OSError, ValueError):
            return ""
        if not isinstance(record, dict):
            return ""
        flags = ""
        if record.get("record") not in (None, "4502485"):
            flags += f" --record {shlex.quote(str(record['record']))}"
        if record.get("base_url") not in (None, "https://zenodo.org"):
            flags += f" --base-url {shlex.quote(str(record['base_url']))}"
        return flags

    def repair_command(self) -> str:
        """The command that really restores this split's missing or broken files."""
        root, split = shlex.quote(str(self.root)), shlex.quote(self.split)
        if self.render_job.exists():
            return (f"run `ident3d audit --data {root} --split {split} --repair` (it re-renders what is "
                    "broken)")
        if self.download_record.exists():
            return f"run `ident3d download --data {root} --split {split}{self._source()} --overwrite`"
        return ("this split was neither rendered by `ident3d render` nor downloaded by `ident3d "
                "download`; re-create it the way it was made")
