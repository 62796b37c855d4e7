"""Render benchmark: seconds per image per preset, `standard`-vs-`paper` error, 1 vs 2 workers.

    python -m benchmarks.render [--latents 20] [--candidates 8,16,32,64]   (from the repository root)

Prints Markdown; the lowest candidate sample count whose mean absolute error against `paper`
stays within 1/255 is the one the `standard` preset should use.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from ident3d.latents import sample_uniform
from render.job import plan_job, render_split
from render.settings import resolve_settings


def render_set(root: Path, latents: Path, settings, workers: int = 1) -> tuple[np.ndarray, float]:
    job = plan_job(root, "bench", n=None, seed=0, variant="v2", settings=settings,
                   latents_file=latents)
    start = time.perf_counter()
    render_split(job, workers=workers, progress=False)
    seconds = time.perf_counter() - start
    files = sorted((root / "bench" / "images").glob("*.png"))
    return np.stack([np.asarray(Image.open(f).convert("RGB"), dtype=np.float64) for f in files]), \
        seconds / len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latents", type=int, default=20)
    parser.add_argument("--candidates", default="8,16,32,64")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        np.save(tmp / "z.npy", sample_uniform(args.latents, seed=123))
        print(f"machine: {platform.processor() or platform.machine()}, "
              f"{__import__('os').cpu_count()} cores; {args.latents} random v2 latents, 224 px\n")
        paper, paper_s = render_set(tmp / "paper", tmp / "z.npy", resolve_settings("paper"))
        print("| setting | s/image | MAE vs paper (/255) | pixels off > 2/255 |")
        print("|---|---:|---:|---:|")
        print(f"| paper (512 + OIDN) | {paper_s:.2f} | 0 | 0 |")
        for samples in [int(s) for s in args.candidates.split(",")]:
            s = resolve_settings("standard", samples=samples)
            img, sec = render_set(tmp / f"s{samples}", tmp / "z.npy", s)
            err = np.abs(img - paper)
            print(f"| {samples} + OIDN | {sec:.2f} | {err.mean():.3f} | "
                  f"{(err.max(-1) > 2).mean():.4f} |")
        for workers in (1, 2):
            z = sample_uniform(200, seed=7)
            np.save(tmp / f"p{workers}.npy", z)
            _, sec = render_set(tmp / f"preview{workers}", tmp / f"p{workers}.npy",
                                resolve_settings("preview"), workers=workers)
            print(f"\npreview preset, {workers} worker(s): {1 / sec:.1f} images/s")
        print("\npaper / standard-64 speed ratio: see rows above (512-sample renders are the "
              "original-style baseline)")


if __name__ == "__main__":
    main()
