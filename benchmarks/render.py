"""Render benchmark: seconds per image per setting, error against `paper`, 1 vs 2 workers.

    python -m benchmarks.render [--latents 20] [--candidates 2,4,4/fast,...] [--reference DIR]
                                [--device cpu|gpu] [--preview-only]

A candidate is SAMPLES[/PREFILTER[/QUALITY]]: denoised samples per pixel and OpenImageDenoise's
prefilter (accurate, fast, none) and quality (high, balanced, fast); Blender's defaults are
accurate and high. Prints Markdown. The fastest candidate whose every image stays within mean
absolute error 1/255 of `paper` is the one the `standard` preset should use. ``--reference DIR``
keeps the `paper` renders (about 21 s each on 2 cores) so a second run re-uses them. ``--device
gpu`` renders everything, `paper` included, with Cycles on the GPU (not measured on this project's
machines, which have none). Last, the `preview` preset's rate as a fresh draw meets it: 2,000 images of
the CPU track, start-up included, with 1 and 2 workers, and what one render call costs a worker of one
Cycles thread, with every latent changed and with nothing changed (the path tracing and the call's
fixed cost), which caps the rate whatever the rest costs (``--preview-only`` prints only that).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from PIL import Image

from ident3d.latents import sample_uniform
from ident3d.render.job import plan_job, plan_track_job, render_split
from ident3d.render.settings import PRESETS, resolve_settings
from ident3d.tracks.registry import get_track

MAE_LIMIT = 1.0  # in 1/255 units
PREVIEW_DRAW = 2000  # a fresh draw's default size on the CPU track
PREVIEW_GOAL = 75  # images/s, issue "Verification in a minute"; 51.7 before workers shared the CPUs
CANDIDATES = "2,4,8,16,64,2/fast,4/fast,8/fast,4/fast/fast"


def candidate(text: str, device: str):
    """``SAMPLES[/PREFILTER[/QUALITY]]`` as render settings."""
    samples, prefilter, quality = (text.split("/") + ["accurate", "high"][text.count("/"):])[:3]
    return replace(resolve_settings("standard", samples=int(samples), device=device),
                   denoise_prefilter=prefilter, denoise_quality=quality)


def label(s) -> str:
    return f"{s.samples} + OIDN ({s.denoise_prefilter} prefilter, {s.denoise_quality} quality)"


def render_set(root: Path, latents: Path, settings, workers: int = 1) -> tuple[np.ndarray, float]:
    """The images and the seconds per image once the workers run: a one-image job first measures
    what every job pays once (starting processes, importing bpy, building the scene), which is
    taken out of the full job's time."""
    def timed_job(folder: str, z: Path) -> float:
        job = plan_job(root, folder, n=None, seed=0, variant="v2", settings=settings, latents_file=z)
        start = time.perf_counter()
        render_split(job, workers=workers, progress=False)
        return time.perf_counter() - start

    root.mkdir(parents=True, exist_ok=True)
    first = root / "first.npy"
    np.save(first, np.load(latents)[:1])
    once = timed_job("first", first)
    seconds = timed_job("bench", latents)
    files = sorted((root / "bench" / "images").glob("[!.]*.png"))
    images = np.stack([np.asarray(Image.open(f).convert("RGB"), dtype=np.float64) for f in files])
    return images, (seconds - once) / (len(files) - 1)


def reference(folder: Path, latents: Path, device: str) -> tuple[np.ndarray, float]:
    """The `paper` renders and their seconds per image, rendered once per folder and device."""
    name = "paper" if device == "cpu" else f"paper-{device}"
    timing = folder / f"{name}-seconds-per-image.json"
    images, seconds = render_set(folder / name, latents, resolve_settings("paper", device=device))
    if not timing.exists():
        timing.write_text(json.dumps(seconds))
    return images, json.loads(timing.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latents", type=int, default=20)
    parser.add_argument("--candidates", default=CANDIDATES)
    parser.add_argument("--reference", type=Path, help="keep the paper renders here (default: temp)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--preview-only", action="store_true", help="only the preview draw's rate")
    args = parser.parse_args()
    if not args.preview_only:
        compare_settings(args)
    preview_draw_rate(args.device)


def preview_draw_rate(device: str, n: int = PREVIEW_DRAW) -> None:
    """Images per second of a whole ``n``-image draw of the CPU track (its `preview` settings, 64 px),
    start-up included (processes, bpy, the scene, the manifest), as `evaluate --fresh` renders it."""
    track = get_track("3dident-v2-64")
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            job = plan_track_job(Path(tmp), track, "test", device=device, draw=(n, 7))
            start = time.perf_counter()
            render_split(job, workers=workers, progress=False)
            seconds = time.perf_counter() - start
        print(f"preview preset (64 px, 4 samples), {n:,} images, {workers} worker(s), start-up included: "
              f"{n / seconds:.1f} images/s (goal with 2 workers: {PREVIEW_GOAL})", flush=True)
    with multiprocessing.get_context("spawn").Pool(1) as pool:  # bpy stays out of this process
        changed, unchanged = pool.apply(render_call_ms, (device,))
    cpus = len(os.sched_getaffinity(0))
    print(f"one render call in a worker of 1 Cycles thread, no file written: {changed:.1f} ms with every "
          f"latent changed, {unchanged:.1f} ms with nothing changed; {cpus} such workers render at most "
          f"{cpus * 1000 / changed:.0f} images/s, and {cpus * 1000 / unchanged:.0f} with no scene change "
          "at all", flush=True)


def render_call_ms(device: str, images: int = 140, warm: int = 40) -> tuple[float, float]:
    """Milliseconds per ``bpy.ops.render.render`` call (no image written) of the CPU track's `preview`
    settings in this process on one Cycles thread, as a render worker makes it: each image with its
    own latents applied, then the same image again and again. Runs in a throw-away process."""
    from ident3d.render import worker

    with tempfile.TemporaryDirectory() as tmp:
        job = plan_track_job(Path(tmp), get_track("3dident-v2-64"), "test", device=device, draw=(images, 7))
        params = job.variant.scene_params(job.raw)
        worker.init_worker(job.settings, threads=1)
        scene = worker._scene  # the worker's own scene (benchmark only: render_one writes files)
        assert scene is not None

        def per_call(apply) -> float:
            total = 0.0
            for i in range(images):
                apply(i)
                began = time.perf_counter()
                scene.bpy.ops.render.render(write_still=False)
                total += (time.perf_counter() - began) * (i >= warm)
            return total / (images - warm) * 1000

        changed = per_call(lambda i: scene.apply(params.row(i)))
        return changed, per_call(lambda i: None)


def compare_settings(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ref = args.reference or tmp / "reference"
        ref.mkdir(parents=True, exist_ok=True)
        z_file = ref / f"z-{args.latents}.npy"
        if not z_file.exists():
            np.save(z_file, sample_uniform(args.latents, seed=123))
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Cycles on {args.device.upper()}; "
              f"{args.latents} random v2 latents, 224 px, 1 worker;\nseconds per image leave out what a "
              "job pays once (process start, bpy import, scene)\n")
        paper, paper_s = reference(ref, z_file, args.device)
        print("| setting | s/image | speed-up vs paper | MAE vs paper (/255) | worst image MAE | "
              "pixels off > 2/255 |")
        print("|---|---:|---:|---:|---:|---:|")
        print(f"| paper (512 + OIDN) | {paper_s:.2f} | 1.0x | 0 | 0 | 0 |")
        fastest = None
        for text in args.candidates.split(","):
            settings = candidate(text, args.device)
            img, sec = render_set(tmp / text.replace("/", "-"), z_file, settings)
            err = np.abs(img - paper)
            worst = err.mean(axis=(1, 2, 3)).max()
            if worst <= MAE_LIMIT and (fastest is None or sec < fastest[1]):
                fastest = (settings, sec)
            print(f"| {label(settings)} | {sec:.2f} | {paper_s / sec:.1f}x | {err.mean():.3f} | "
                  f"{worst:.3f} | {(err.max(-1) > 2).mean():.4f} |", flush=True)
        if fastest:
            print(f"\nfastest with every image within {MAE_LIMIT}/255 MAE: {label(fastest[0])}, "
                  f"{paper_s / fastest[1]:.0f}x faster than paper")
        print(f"the `standard` preset: {label(PRESETS['standard'])}")


if __name__ == "__main__":
    main()
