"""Where each file of a dataset split lives (DESIGN.md, "The dataset on disk").

``<root>/<split>/images/<index>.png``, ``raw_latents.npy``, ``latents.npy``, ``manifest.json``,
plus ``images.npy`` once packed and ``render_job.json`` / ``shards/`` while rendering.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

SPLITS = ("train", "test")


def padding_width(n: int) -> int:
    """Digits in image names: ceil(log10 N) as in the published dataset (at least 1)."""
    return max(1, math.ceil(math.log10(n))) if n > 0 else 1


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

    def image(self, index: int, width: int) -> Path:
        return self.images / f"{index:0{width}d}.png"
