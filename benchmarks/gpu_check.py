"""One prepared GPU check: the four GPU paths of the package, measured in one command on one GPU.

    python -m benchmarks.gpu_check --out gpu-check.json            (about 6 minutes on one GPU)
    python -m benchmarks.gpu_check --device cpu --tiny --out x.json  (seconds: the suite runs it)

1. Rendering: the track's `standard` preset at 224 px on the GPU (Blender's Cycles on CUDA/OptiX),
   images per second with start-up, and the mean absolute difference of each image from a CPU render
   of the same latents (grey levels of 255; the renders' own noise differs between devices).
2. Training: `ident3d.baselines.train.train` with the `normal-box` preset, 512 pairs of 224 px per
   step (uint8 delivery, channels-last, bf16 autocast on CUDA), steps per second after the first log
   window (start-up and the first steps' allocation).
3. The synthetic T2.1 setting at batch 6,144 (the paper's): steps per second from a short probe, then
   a run sized to about 3 minutes, its held-out R² and MCC curve.
4. The evaluator: images per second encoding the trained encoder's `.pt2` in the sandbox on the
   device, and the whole `evaluate` wall time of that split.

It writes every figure to one JSON file and prints them as a table. No GPU has run it yet (this
project has had none); `--device cpu --tiny` runs the same code at toy sizes on the CPU
(`tests/test_gpu_check.py`), so it cannot rot before the first GPU session.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class Sizes:
    """The sizes of one check: the real one, or ``TINY`` for the test suite."""

    render_images: int = 16
    render_resolution: int = 224
    render_preset: str = "standard"
    render_samples: int | None = None  # the preset's
    train_resolution: int = 224
    train_images: int = 2048
    train_pairs: int = 512
    train_steps: int = 30
    train_log_every: int = 5
    synthetic_batch: int = 6144
    synthetic_probe_steps: int = 50
    synthetic_seconds: float = 180.0
    synthetic_curve_points: int = 6
    eval_images: int = 2000


TINY = Sizes(render_images=2, render_resolution=32, render_preset="preview", render_samples=2,
             train_resolution=32, train_images=64, train_pairs=8, train_steps=4, train_log_every=1,
             synthetic_batch=64, synthetic_probe_steps=4, synthetic_seconds=2.0, synthetic_curve_points=2,
             eval_images=64)


def _pixels(root: Path) -> np.ndarray:
    from ident3d.datasets import ThreeDIdent

    split = ThreeDIdent(root, "test")
    return np.stack([split.load_array(i) for i in range(len(split))]).astype(np.float64)


def check_render(device: torch.device, sizes: Sizes, scratch: Path) -> dict[str, Any]:
    """The GPU's renders per second (start-up included) and their difference from CPU renders."""
    from ident3d.render.job import plan_job, render_split
    from ident3d.render.settings import resolve_settings

    seconds, roots = {}, {}
    for blender in ("gpu" if device.type == "cuda" else "cpu", "cpu"):
        root = scratch / f"render-{blender}-{len(roots)}"
        settings = resolve_settings(sizes.render_preset, sizes.render_resolution, sizes.render_samples,
                                    device=blender)
        job = plan_job(root, "test", n=sizes.render_images, seed=0, variant="v2", settings=settings)
        start = time.perf_counter()
        render_split(job, workers=1, progress=False)
        seconds.setdefault(blender, time.perf_counter() - start)
        roots[len(roots)] = root
    gap = np.abs(_pixels(roots[0]) - _pixels(roots[1])).mean(axis=(1, 2, 3))
    measured = "gpu" if device.type == "cuda" else "cpu"
    return {"preset": sizes.render_preset, "resolution": sizes.render_resolution,
            "images": sizes.render_images, "images_per_s": sizes.render_images / seconds[measured],
            "cpu_images_per_s": sizes.render_images / seconds["cpu"],
            "mae_vs_cpu_mean": float(gap.mean()), "mae_vs_cpu_worst": float(gap.max())}


def check_training(device: torch.device, sizes: Sizes, scratch: Path) -> tuple[dict[str, Any], Path]:
    """Steps per second of the baselines' training loop; returns the run's exported encoder too."""
    from ident3d.baselines.config import load_preset
    from ident3d.baselines.train import read_log, train
    from ident3d.fake_splits import write_fake_split

    data = scratch / "train-data"
    write_fake_split(data, "train", sizes.train_images, sizes.train_resolution, pixels="network", png=False)
    config = load_preset("normal-box", data=str(data), iterations=sizes.train_steps,
                         batch_size=sizes.train_pairs, device=str(device), log_every=sizes.train_log_every,
                         eval_every=0, checkpoint_every=sizes.train_steps)
    out = scratch / "train-run"
    train(config, out, progress=False)
    records = read_log(out / "log.jsonl")[1:] or read_log(out / "log.jsonl")  # after the first window
    images_per_s = float(np.mean([r["images_per_s"] for r in records]))
    return ({"preset": "normal-box", "resolution": sizes.train_resolution, "pairs": sizes.train_pairs,
             "steps": sizes.train_steps,
             "autocast": "bf16" if device.type == "cuda" and config.amp else "none",
             "steps_per_s": images_per_s / (2 * sizes.train_pairs), "images_per_s": images_per_s,
             "data_wait": float(np.mean([r["data_wait"] for r in records])),
             "final_loss": records[-1]["loss"]}, out / "encoder.pt2")


def check_synthetic(device: torch.device, sizes: Sizes, scratch: Path) -> dict[str, Any]:
    """T2.1 at the paper's batch: a probe's steps per second, then a run of about the asked seconds."""
    from ident3d.baselines.synthetic.budget import Budget
    from ident3d.baselines.synthetic.run import run
    from ident3d.baselines.synthetic.table import get_row

    row, probe = get_row("T2.1"), sizes.synthetic_probe_steps
    seconds = []
    for steps in (probe, 2 * probe):  # the difference of two runs leaves out start-up and evaluation
        start = time.perf_counter()
        run(row, 0, Budget(steps=steps, batch_size=sizes.synthetic_batch, eval_every=steps),
            scratch / f"synthetic-probe-{steps}", progress=False, device=str(device))
        seconds.append(time.perf_counter() - start)
    rate = probe / max(seconds[1] - seconds[0], 1e-3)
    steps = max(sizes.synthetic_curve_points, int(rate * sizes.synthetic_seconds))
    steps -= steps % sizes.synthetic_curve_points
    budget = Budget(steps=steps, batch_size=sizes.synthetic_batch,
                    eval_every=steps // sizes.synthetic_curve_points)
    start = time.perf_counter()
    result = json.loads(run(row, 0, budget, scratch / "synthetic", progress=False,
                            device=str(device)).read_text())
    seconds = time.perf_counter() - start
    return {"row": "T2.1", "batch_size": sizes.synthetic_batch, "probe_steps_per_s": rate,
            "steps": steps, "steps_per_s": steps / seconds, "wall_seconds": seconds,
            "r2": result["r2"], "mcc": result["mcc"],
            "curve": [{k: point[k] for k in ("step", "r2", "mcc")} for point in result["curve"]]}


def check_evaluator(device: torch.device, sizes: Sizes, scratch: Path, encoder: Path) -> dict[str, Any]:
    """Images per second the sandboxed encoder runs at on the device, and the whole evaluation's time."""
    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import evaluate, features
    from ident3d.fake_splits import write_fake_split
    from ident3d.submissions import load_submission

    data = scratch / "eval-data"
    write_fake_split(data, "test", sizes.eval_images, sizes.train_resolution, seed=1, pixels="network",
                     png=False)
    split = ThreeDIdent(data, "test")
    submission = load_submission(encoder, device=str(device))
    try:
        features(submission, split, device, 256, False)  # the first pass warms the device up
        start = time.perf_counter()
        features(submission, split, device, 256, False)
        encoding = time.perf_counter() - start
    finally:
        submission.close()
    result = evaluate(encoder, data, device=str(device), progress=False)
    return {"images": sizes.eval_images, "resolution": sizes.train_resolution,
            "images_per_s": sizes.eval_images / encoding, "evaluate_wall_s": result.document["wall_time_s"]}


def table(record: dict[str, Any]) -> str:
    render, training, synthetic, evaluator = (record[k] for k in ("render", "training", "synthetic",
                                                                    "evaluator"))
    curve = ", ".join(f"{p['step']}: {p['r2']:.1f}/{p['mcc']:.1f}" for p in synthetic["curve"])
    rows = [
        ("render", f"`{render['preset']}` {render['resolution']} px, {render['images']} images",
         f"{render['images_per_s']:.2f} images/s with start-up (CPU {render['cpu_images_per_s']:.2f}); "
         f"MAE against the CPU render {render['mae_vs_cpu_mean']:.2f}/255 "
         f"(worst {render['mae_vs_cpu_worst']:.2f})"),
        ("training", f"normal-box, {training['pairs']} pairs of {training['resolution']} px, "
                     f"autocast {training['autocast']}",
         f"{training['steps_per_s']:.2f} steps/s ({training['images_per_s']:,.0f} images/s), data wait "
         f"{training['data_wait']:.3f}"),
        ("synthetic", f"T2.1, batch {synthetic['batch_size']:,}, {synthetic['steps']:,} steps",
         f"{synthetic['steps_per_s']:.1f} steps/s; R² {synthetic['r2']:.2f}, MCC {synthetic['mcc']:.2f}; "
         f"curve (step: R²/MCC) {curve}"),
        ("evaluator", f"{evaluator['images']:,} images of {evaluator['resolution']} px",
         f"{evaluator['images_per_s']:,.0f} images/s encoding in the sandbox; evaluate "
         f"{evaluator['evaluate_wall_s']:.1f} s"),
    ]
    lines = [f"{record['device_name']}, torch {record['torch']}, CUDA {record['cuda']}, "
             f"{record['wall_seconds']:.0f} s in all", "", "| path | setting | measured |", "|---|---|---|"]
    return "\n".join([*lines, *(f"| {a} | {b} | {c} |" for a, b, c in rows)])


def main(argv: list[str] | None = None) -> int:
    from ident3d import atomic
    from ident3d.devices import device_description, resolve_device
    from ident3d.errors import Ident3dError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu")
    parser.add_argument("--tiny", action="store_true", help="toy sizes: seconds, for the test suite")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write (a new file)")
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
        if args.out.exists():
            raise Ident3dError(f"--out {args.out}: exists. Fix: choose a new file; nothing is overwritten.")
        sizes = TINY if args.tiny else Sizes()
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="ident3d-gpu-check-") as tmp:
            scratch = Path(tmp)
            training, encoder = check_training(device, sizes, scratch)
            record = {"device_name": device_description(device), "torch": torch.__version__,
                      "cuda": torch.version.cuda, "tiny": args.tiny,
                      "render": check_render(device, sizes, scratch), "training": training,
                      "synthetic": check_synthetic(device, sizes, scratch),
                      "evaluator": check_evaluator(device, sizes, scratch, encoder)}
        record["wall_seconds"] = time.perf_counter() - start
    except Ident3dError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    atomic.write_json(args.out, record)
    print(table(record))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
