"""Everything a published bundle says about its data, gathered once from the variant spec, the split
manifests, the track and the shards; the Croissant file, the Hugging Face card and the datasheet are
all written from one ``BundleFacts``, so no fact is typed twice."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ident3d.scene import get_mapping
from ident3d.variants import Variant

DATA_LICENSE = "CC-BY-4.0"  # the data ident3d renders (README, "Licence")
DATA_LICENSE_URL = "https://creativecommons.org/licenses/by/4.0/"
PAPER = "Zimmermann et al., Contrastive Learning Inverts the Data Generating Process (ICML 2021)"
PAPER_URL = "https://proceedings.mlr.press/v139/zimmermann21a.html"
PUBLISHED_URL = "https://zenodo.org/records/4502485"
CITATION = """@inproceedings{zimmermann2021contrastive,
  title     = {Contrastive Learning Inverts the Data Generating Process},
  author    = {Zimmermann, Roland S. and Sharma, Yash and Schneider, Steffen and Bethge, Matthias
               and Brendel, Wieland},
  booktitle = {Proceedings of the 38th International Conference on Machine Learning (ICML)},
  year      = {2021}
}"""
CREATOR = "The ident3d developers"


@dataclass(frozen=True)
class Shard:
    path: str  # relative to the bundle folder, with forward slashes
    sha256: str
    n_bytes: int


@dataclass(frozen=True)
class SplitFacts:
    name: str
    n: int
    shards: tuple[Shard, ...]
    latents_sha256: str
    seeds: dict[str, Any]


@dataclass(frozen=True)
class BundleFacts:
    name: str  # the track's id or the split's custom key: what the data verifiably is
    title: str
    description: str
    variant: Variant
    resolution: int
    render: dict[str, Any]  # a rendered split's settings; empty for the published archives
    renderer: str  # "Blender 5.0.1 (bpy), Cycles" or where the images came from
    splits: tuple[SplitFacts, ...]
    rendered_by_ident3d: bool
    version: str = "1.0.0"  # a track's version as MAJOR.0.0 (Croissant asks for semantic versions)
    published: str = ""  # the day the bundle was written, ISO 8601

    @property
    def license(self) -> str | None:
        """SPDX id of the data's licence; None where ident3d cannot state it (the published archives)."""
        return DATA_LICENSE if self.rendered_by_ident3d else None

    @property
    def license_url(self) -> str | None:
        return DATA_LICENSE_URL if self.rendered_by_ident3d else None

    @property
    def license_text(self) -> str:
        if self.rendered_by_ident3d:
            return (f"{DATA_LICENSE} ({DATA_LICENSE_URL}) for the rendered images and latents; the code "
                    "that rendered them is MIT (LICENSE)")
        return (f"as stated by the original publication ({PUBLISHED_URL}); ident3d redistributes it "
                "unchanged and states no licence of its own for it")

    @property
    def homepage(self) -> str:
        return PAPER_URL if self.rendered_by_ident3d else PUBLISHED_URL

    @property
    def n_images(self) -> int:
        return sum(s.n for s in self.splits)

    @property
    def limitations(self) -> list[str]:
        """Known limitations, from the variant's colour mapping and the render settings."""
        out = []
        if not get_mapping(self.variant.colour).wraps_hue:
            out.append("The colour mapping is the original 3DIdent's: hue latents beyond the colour "
                       "circle's arc are clamped, so the three hue latents are partly unrecoverable from "
                       "the images (ident3d docs/facts.md, 'Latents').")
        if self.render and not self.render.get("denoise", True):
            out.append(f"Rendered with {self.render.get('samples')} path-tracing samples and no "
                       "denoising: the images carry Monte-Carlo noise.")
        if self.resolution < 224:
            out.append(f"{self.resolution} x {self.resolution} px, smaller than the paper's 224 px: "
                       "numbers measured on it are not comparable with the paper's Table 4.")
        out.append("Synthetic scenes of one object on a plain ground: not a proxy for natural images; "
                   "identifiability measured here says nothing about real-world data.")
        return out

    def info(self) -> dict[str, str]:
        """The Hugging Face ``DatasetInfo`` fields, as the card states them."""
        return {"description": self.description, "citation": CITATION, "homepage": self.homepage,
                "license": self.license or "unknown"}


def shard_facts(bundle: Path, paths: list[Path]) -> tuple[Shard, ...]:
    out = []
    for path in paths:
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        out.append(Shard(path.relative_to(bundle).as_posix(), digest, path.stat().st_size))
    return tuple(out)


def renderer_text(manifest: dict[str, Any]) -> str:
    renderer = manifest.get("renderer") or {}
    if not renderer:
        return "the published 3DIdent archives (Zenodo record 4502485), rendered by the paper's authors"
    return (f"ident3d {renderer.get('ident3d')} with Blender {renderer.get('blender')} as a Python module "
            f"(bpy), {renderer.get('engine')} engine")
