"""Latent traversals (the paper's Figure 3): one row per latent swept across its range.

Every other latent stays at a base value (the centre of the box unless given); under each image
is the swept latent's value there (raw u, or the class's name). The renders go
through the ordinary resumable job machinery into a cache folder, then one labelled grid PNG is
written atomically.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ident3d import atomic
from ident3d.errors import RenderError
from ident3d.render.job import plan_job, render_split
from ident3d.render.settings import RenderSettings
from ident3d.variants import Variant, get_variant

LABEL_WIDTH = 150
CAPTION_HEIGHT = 14  # the strip under each image that names the swept latent's value
BACKGROUND = (255, 255, 255)


def traversal_latents(steps: int, base: np.ndarray | None = None, variant: str | Variant = "v2"
                      ) -> np.ndarray:
    """Raw latents of shape (k * steps, k): row block i sweeps latent i from -1 to 1, or through
    its classes (evenly spaced class numbers: every class when steps >= the number of classes)."""
    if steps < 2:
        raise RenderError(f"steps must be at least 2 to show a change, got {steps}")
    variant = get_variant(variant)
    k = variant.n_latents
    base = np.zeros(k, np.float32) if base is None else np.asarray(base, np.float32)
    variant.check_raw(base[None], what="traversal base latent")
    grid = np.repeat(base[None], k * steps, axis=0)
    for f in variant.factors:
        sweep = (np.round(np.linspace(0, len(f.classes) - 1, steps)) if f.is_class
                 else np.linspace(-1.0, 1.0, steps))
        grid[f.index * steps:(f.index + 1) * steps, f.index] = sweep
    return grid


def column_captions(variant: Variant, steps: int) -> list[list[str]]:
    """Under each image, the swept latent's value there: the raw u in [-1, 1], or the class's name."""
    grid = traversal_latents(steps, variant=variant)
    return [[f.classes[int(grid[f.index * steps + col, f.index])] if f.is_class
             else f"{grid[f.index * steps + col, f.index]:+.2f}" for col in range(steps)]
            for f in variant.factors]


def compose_grid(images: list[Path], steps: int, labels: list[str], captions: list[list[str]]) -> Image.Image:
    """Paste ``len(labels)`` rows of ``steps`` images, each row labelled on the left and each image
    captioned beneath with the swept latent's value (``captions[row][column]``)."""
    tiles = [Image.open(p).convert("RGB") for p in images]
    size = tiles[0].width
    row_height = size + CAPTION_HEIGHT
    sheet = Image.new("RGB", (LABEL_WIDTH + steps * size, len(labels) * row_height), BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for row, label in enumerate(labels):
        top = row * row_height
        draw.text((6, top + size // 2 - 6), label, fill=(0, 0, 0), font=font)
        for col in range(steps):
            sheet.paste(tiles[row * steps + col], (LABEL_WIDTH + col * size, top))
            draw.text((LABEL_WIDTH + col * size + size // 2, top + size + CAPTION_HEIGHT // 2),
                      captions[row][col], fill=(60, 60, 60), font=font, anchor="mm")
    return sheet


def render_traversal(out: Path, *, variant: str | Variant, steps: int, settings: RenderSettings,
                     cache: Path | None = None, workers: int = 1, progress: bool = True) -> Path:
    """Render the traversal grid to ``out`` (PNG). Renders are kept in ``cache`` for resuming."""
    out = Path(out)
    cache = Path(cache) if cache is not None else out.with_name(f".{out.stem}-renders")
    cache.mkdir(parents=True, exist_ok=True)
    variant = get_variant(variant)
    latents_file = cache / f"traversal-{variant.name}-{steps}.npy"
    if not latents_file.exists():
        atomic.save_npy(latents_file, traversal_latents(steps, variant=variant))
    split = f"{variant.name}-{settings.preset}-{settings.resolution}px-{steps}"
    job = plan_job(cache, split, n=None, seed=0, variant=variant, settings=settings,
                   latents_file=latents_file)
    render_split(job, workers=workers, progress=progress)
    images = [job.layout.image(i, job.padding) for i in range(job.n)]
    labels = [f"{f.name} ({variant.name})" for f in variant.factors]
    with atomic.atomic_path(out, suffix=".png") as tmp:
        compose_grid(images, steps, labels, column_captions(variant, steps)).save(tmp, format="PNG")
    return out
