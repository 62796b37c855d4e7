"""Evaluator benchmark: metric wall times on 25,000 x 10 arrays; encoding speed at 224 px.

    python -m benchmarks.evaluator [--images 768]     (from the repository root)

Encoding runs the real submission path (an exported ResNet18 ``.pt2`` loaded by the evaluator's
checked loader) over a packed synthetic 224 px split, three ways: the plain loop the evaluator
used before (eager, contiguous memory), channels-last, and channels-last compiled with frozen
weights (what ``ident3d.inference`` picks for large splits on CPU). Each row reports images/s,
the ratio to the plain loop, the largest feature difference and the largest change of any
per-latent metric. bfloat16 autocast is shown for comparison only (the evaluator does not use it).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torchvision

from ident3d import metrics
from ident3d.baselines.train import export_program
from ident3d.batching import image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.fake_splits import write_fake_split
from ident3d.inference import Runner
from ident3d.protocols import REGISTRY, per_latent_metrics
from ident3d.sandbox.loading import program_module
from ident3d.sandbox.pt2_reader import read_archive
from ident3d.submissions import Standardisation, check_features

BATCH = 128


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def metric_tables() -> None:
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, (25000, 10))
    h = np.tanh(z @ rng.normal(size=(10, 10))) + 0.05 * rng.normal(size=z.shape)
    fit, score_half = slice(0, 12500), slice(12500, None)
    print(f"{os.cpu_count()} cores, torch {torch.__version__}; 25,000 x 10 arrays, half fit, half score\n")
    print("| step | seconds |\n|---|---:|")
    _, t = timed(metrics.linear_r2, z[fit], h[fit], z[score_half], h[score_half])
    print(f"| linear R^2 | {t:.3f} |")
    _, t = timed(metrics.nonlinear_r2, z[fit], h[fit], z[score_half], h[score_half])
    print(f"| nonlinear R^2 (kernel ridge, grid 4 x 4, 3-fold CV, 4,000 points) | {t:.2f} |")
    _, t = timed(metrics.mcc, z, h, "pearson")
    print(f"| MCC Pearson | {t:.3f} |")
    _, t = timed(metrics.mcc, z, h, "spearman")
    print(f"| MCC Spearman | {t:.3f} |")


def encode_with(run, dataset: ThreeDIdent, bf16: bool = False) -> tuple[np.ndarray, float]:
    """Features of every image and the images/s of the loop, after one warm-up batch."""
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()
    n = len(dataset)
    with torch.inference_mode(), autocast:
        run(image_batch(dataset, np.arange(BATCH)))
        start = time.perf_counter()
        out = [run(image_batch(dataset, np.arange(i, min(n, i + BATCH)))).float().numpy()
               for i in range(0, n, BATCH)]
        rate = n / (time.perf_counter() - start)
    return np.concatenate(out), rate


def encoding_table(n_images: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write_fake_split(Path(tmp), "test", n_images, 224, seed=0, pixels="network", png=False)
        dataset = ThreeDIdent(tmp, "test")
        torch.manual_seed(0)
        export_program(torchvision.models.resnet18(num_classes=10), Path(tmp) / "encoder.pt2", 224)
        # the rebuild the sandbox runs, here in-process: the rows compare ways of running one model
        _, model = program_module(read_archive((Path(tmp) / "encoder.pt2").read_bytes()))
        z = dataset.latents.astype(np.float64)
        cpu = torch.device("cpu")
        rows = [("plain loop (eager, contiguous; the evaluator before)", lambda: model, False),
                ("channels-last", lambda: Runner(model, cpu, BATCH, compile=False), False),
                ("channels-last, compiled with frozen weights", lambda: Runner(model, cpu, BATCH,
                                                                               compile=True), False),
                ("bf16 autocast, channels-last (not used)", lambda: Runner(model, cpu, BATCH,
                                                                          compile=False), True)]
        print(f"\nencoding {n_images} images of 224 px, batch {BATCH}, {torch.get_num_threads()} threads, "
              "exported ResNet18 (.pt2)\n")
        print("| path | set-up s | images/s | ratio | max feature diff | max metric change |")
        print("|---|---:|---:|---:|---:|---:|")
        reference = base_rate = None
        timings = {}
        for label, make, bf16 in rows:
            start = time.perf_counter()
            run = make()
            h, rate = encode_with(run, dataset, bf16)
            setup = time.perf_counter() - start - n_images / rate
            features = check_features(h, n_images, label)
            s = REGISTRY["ident3d-eval-v1"].score(z, Standardisation.fit(features)(features, label))
            values = np.concatenate([s.per_latent(k) for k in per_latent_metrics()])
            if reference is None:
                reference, base_rate, h0 = values, rate, h
            print(f"| {label} | {setup:.1f} | {rate:.1f} | {rate / base_rate:.2f}x | "
                  f"{np.abs(h - h0).max():.1e} | {np.abs(values - reference).max():.1e} |", flush=True)
            if isinstance(run, Runner):
                model.to(memory_format=torch.contiguous_format)  # the next row starts from the same model
            timings[label] = (setup, rate)
        (_, plain), (_, eager), (setup, compiled) = list(timings.values())[:3]
        if compiled > eager:
            print(f"\ncompiling would pay for itself from about {setup / (1 / eager - 1 / compiled):,.0f} "
                  "images (the evaluator does not compile: see ident3d.inference)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=768, help="images to encode per path")
    args = parser.parse_args()
    metric_tables()
    encoding_table(args.images)


if __name__ == "__main__":
    main()
