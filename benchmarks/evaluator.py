"""Evaluator benchmark: metric wall times on 25,000 x 10 arrays, ResNet18 encoding per 1,000 images.

    python -m benchmarks.evaluator      (from the repository root)
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
import torchvision

from ident3d import metrics


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def main() -> None:
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, (25000, 10))
    h = np.tanh(z @ rng.normal(size=(10, 10))) + 0.05 * rng.normal(size=z.shape)
    fit, score = slice(0, 12500), slice(12500, None)
    print(f"{os.cpu_count()} cores, torch {torch.__version__}; 25,000 x 10 arrays, half fit, half score\n")
    print("| step | seconds |\n|---|---:|")
    _, t = timed(metrics.linear_r2, z[fit], h[fit], z[score], h[score])
    print(f"| linear R^2 | {t:.3f} |")
    _, t = timed(metrics.nonlinear_r2, z[fit], h[fit], z[score], h[score])
    print(f"| nonlinear R^2 (kernel ridge, grid 4 x 4, 3-fold CV, 4,000 points) | {t:.2f} |")
    _, t = timed(metrics.mcc, z, h, "pearson")
    print(f"| MCC Pearson | {t:.3f} |")
    _, t = timed(metrics.mcc, z, h, "spearman")
    print(f"| MCC Spearman | {t:.3f} |")
    model = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.rand(100, 3, 224, 224)
    with torch.inference_mode():
        model(x[:8])
        _, t = timed(lambda: [model(x[i:i + 50]) for i in range(0, 100, 50)])
    print(f"| ResNet18 encoding, CPU, 224 px, per 1,000 images | {t * 10:.1f} |")


if __name__ == "__main__":
    main()
