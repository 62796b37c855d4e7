"""The docs' traversal figures (docs/why.md, docs/variants.md), rendered with Blender by the reports
registry (``python -m ident3d.baselines.reports --write --only traversals``).

A figure is one or more ``ident3d traverse`` grids side by side. Rendering takes Blender and a
minute, so a figure is not compared by its pixels: its PNG carries the SHA-256 of its recipe (the
grids' variants, presets, sizes and steps) together with every source file of the renderer and the
variants (``RENDERER``), and it is stale when that digest moves. Editing the scene, a variant or the
grid layout therefore asks for the figure to be drawn again; nothing else does.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from PIL import Image, PngImagePlugin

PACKAGE = Path(__file__).parents[1]  # ident3d/ (baselines/ and render/ are links into it in a checkout)
RENDERER = ("render", "variants")  # folders of the package whose sources decide the pixels
RECIPE_KEY = "ident3d-render-recipe-sha256"  # the PNG text chunk holding the figure's digest
GAP = 16  # white pixels between two grids


@dataclass(frozen=True)
class Grid:
    """One ``ident3d traverse --variant V --preset P --resolution R --steps S`` grid."""

    variant: str
    preset: str
    resolution: int
    steps: int = 7


@dataclass(frozen=True)
class TraversalFigure:
    """Grids drawn side by side, left to right (the ``Drawn`` content of a reports registry row)."""

    grids: tuple[Grid, ...]
    source_key: ClassVar[str] = RECIPE_KEY

    def digest(self) -> str:
        recipe = hashlib.sha256(json.dumps([vars(g) for g in self.grids]).encode())
        for folder in RENDERER:
            if not (PACKAGE / folder).is_dir():
                raise FileNotFoundError(f"{PACKAGE / folder}: the renderer's sources, which a traversal "
                                        "figure's digest covers, are missing. Fix: reinstall ident3d")
            for path in sorted((PACKAGE / folder).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    recipe.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
        return recipe.hexdigest()

    def png(self) -> bytes:
        """Render every grid (Blender, 2 workers) and join them, carrying ``digest``."""
        from ident3d.render.settings import resolve_settings
        from ident3d.render.traverse import render_traversal

        with tempfile.TemporaryDirectory() as scratch:
            drawn = []
            for i, grid in enumerate(self.grids):
                out = Path(scratch) / f"{i}.png"
                render_traversal(out, variant=grid.variant, steps=grid.steps, workers=2, progress=False,
                                 settings=resolve_settings(grid.preset, grid.resolution))
                drawn.append(Image.open(out).convert("RGB"))
        sheet = Image.new("RGB", (sum(d.width for d in drawn) + GAP * (len(drawn) - 1),
                                  max(d.height for d in drawn)), "white")
        left = 0
        for image in drawn:
            sheet.paste(image, (left, 0))
            left += image.width + GAP
        info = PngImagePlugin.PngInfo()
        info.add_text(RECIPE_KEY, self.digest())
        out = io.BytesIO()
        sheet.save(out, format="PNG", pnginfo=info)
        return out.getvalue()


FIGURES = {  # the figure's path in the repository -> what it draws
    "docs/traversals.png": TraversalFigure((Grid("legacy", "standard", 80), Grid("v2", "standard", 80))),
    "docs/variant-objects.png": TraversalFigure((Grid("objects", "preview", 64),)),
}
