"""Where ``ident3d-eval-v1``'s scoring time goes, part by part, on the pixel read-out of a track split.

    python -m benchmarks.scoring --data ROOT [--split test]     (from the repository root)

ROOT holds a rendered split (for the CPU track: `ident3d render --track 3dident-v2-64 --split test
--out ROOT`); its images are average-pooled to 8 x 8 (the pixel read-out's 192 features) in this
process, so the table is the scoring alone: no sandbox, no encoding. Each part is timed alone, one
after the other, on the protocol's own halves, with the load average beside it; then the whole
protocol as it runs (its parts side by side, ``ident3d.parallel_fits``) against one part after the
other, as the evaluator ran it before.

The last rows answer whether choosing the kernel ridge's alpha from one eigendecomposition per fold
and gamma (every alpha then costs two matrix products) would beat one Cholesky factorisation per alpha
(what the protocol does): both are timed on a kernel matrix of the cross-validation's fold size.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
from scipy.linalg import cho_factor, eigh
from scipy.spatial.distance import cdist

from ident3d import metrics, parallel_fits
from ident3d.baselines.pixels import PixelReadout
from ident3d.batching import image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.dci import dci
from ident3d.extrapolation import ExtrapolationReadouts
from ident3d.protocols import REGISTRY, SPLIT_SEED


def pixel_features(dataset: ThreeDIdent, batch: int = 500) -> np.ndarray:
    readout = PixelReadout()
    with torch.inference_mode():
        return np.concatenate([readout(image_batch(dataset, np.arange(i, min(len(dataset), i + batch))))
                               .double().numpy() for i in range(0, len(dataset), batch)])


def seconds(work) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a root holding a rendered split")
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    dataset = ThreeDIdent(args.data, args.split)
    z, h = dataset.latents.astype(np.float64), pixel_features(dataset)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(z))
    fit, score = order[: len(z) // 2], order[len(z) // 2:]
    print(f"{os.cpu_count()} cores, torch threads {torch.get_num_threads()}; the pixel read-out "
          f"({h.shape[1]} features) of {args.data}/{args.split}, {len(z):,} images, fit on {len(fit):,}; "
          f"load average {os.getloadavg()[0]:.1f} before\n")
    print("| part of ident3d-eval-v1 | seconds |\n|---|---:|")
    kernel: list[dict[str, float]] = []
    parts = {
        "kernel choice: 3-fold CV over 4 gammas x 4 alphas (48 factorisations)":
            lambda: kernel.extend(metrics.choose_kernels(z[fit], h[fit], seed=SPLIT_SEED)),
        "read-outs of every latent fitted (affine; kernel, one factorisation per distinct choice)":
            lambda: metrics.Readouts.fit(h[fit], z[fit], kernel, seed=SPLIT_SEED),
        "read-out extrapolation fitted (10 latents and 5 corners, each on its own rows)":
            lambda: ExtrapolationReadouts.fit(z[fit], h[fit], kernel),
        "DCI (elastic net by coordinate descent, then D, C, I)":
            lambda: dci(z[fit], h[fit], z[score], h[score]),
        "MCC, Pearson and Spearman (matched on the fit half, scored on the other)":
            lambda: [metrics.mcc(z[score], h[score], method, metrics.mcc(z[fit], h[fit], method)[1])
                     for method in ("pearson", "spearman")],
    }
    for label, work in parts.items():
        print(f"| {label} | {seconds(work):.2f} |", flush=True)
    for name in REGISTRY:
        print(f"| all of {name} | {seconds(lambda name=name: REGISTRY[name].score(z, h)):.2f} |", flush=True)
    side_by_side = seconds(lambda: REGISTRY["ident3d-eval-v1"].score(z, h))
    workers, threads = parallel_fits.share(parallel_fits.thread_budget())
    before, parallel_fits.MAX_WORKERS = parallel_fits.MAX_WORKERS, 1  # the evaluator before: a part at a time
    one_at_a_time = seconds(lambda: REGISTRY["ident3d-eval-v1"].score(z, h))
    parallel_fits.MAX_WORKERS = before
    print(f"| all of ident3d-eval-v1 again, its parts side by side ({workers} workers, {threads} BLAS "
          f"thread(s) each) | {side_by_side:.2f} |\n| all of ident3d-eval-v1, one part after the other "
          f"(the evaluator before) | {one_at_a_time:.2f} |\n\nside by side: "
          f"{one_at_a_time / side_by_side:.2f}x faster than one part after the other", flush=True)

    n = len(fit) - len(fit) // metrics.KERNEL_FOLDS
    points = (h[fit][:n] - h[fit].mean(0)) / np.where(h[fit].std(0) > 0, h[fit].std(0), 1.0)
    gram = np.exp(-float(metrics.KERNEL_GAMMAS[1]) / points.shape[1] * cdist(points, points, "sqeuclidean"))
    factorise = min(seconds(lambda: cho_factor(gram + 0.01 * np.eye(n))) for _ in range(3))
    decompose = min(seconds(lambda: eigh(gram, driver="evd")) for _ in range(2))
    alphas = len(metrics.KERNEL_ALPHAS)
    print(f"\none kernel matrix of the CV's fold size ({n:,} x {n:,}): a Cholesky factorisation "
          f"{factorise:.3f} s, an eigendecomposition {decompose:.3f} s ({decompose / factorise:.0f} "
          f"factorisations). With {alphas} alphas per gamma, one factorisation per alpha costs "
          f"{alphas * factorise:.2f} s per fold and gamma against {decompose:.2f} s for the "
          f"eigendecomposition: the protocol factorises per alpha.")
    print(cpu_scaling(gram + 0.01 * np.eye(n)), f"Load average {os.getloadavg()[0]:.1f} after.")


def cpu_scaling(matrix: np.ndarray, jobs: int = 4) -> str:
    """How much this machine's 2 CPUs add up to on the protocol's heaviest operation: ``jobs``
    factorisations of ``matrix`` one after the other on one BLAS thread; on two threads of one BLAS
    thread each, through scipy's ``cho_factor`` (which holds the GIL while LAPACK runs) and through
    ``ident3d.lapack`` (which does not); and one after the other on two BLAS threads."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    from ident3d.lapack import cholesky_solve

    def factorise_all(factorise, workers: int, blas: int) -> float:
        with threadpool_limits(limits=blas, user_api="blas"), ThreadPoolExecutor(workers) as pool:
            return min(seconds(lambda: list(pool.map(lambda _: factorise(), range(jobs)))) for _ in range(3))

    def scipys() -> None:
        cho_factor(matrix, check_finite=False)

    def ident3ds() -> None:
        cholesky_solve(np.array(matrix, order="F"), matrix[:, :1])

    alone = factorise_all(scipys, 1, 1)
    held, released = factorise_all(scipys, 2, 1), factorise_all(ident3ds, 2, 1)
    two_blas = factorise_all(scipys, 1, 2)
    return (f"{jobs} such factorisations on 1 BLAS thread: {alone:.3f} s one after the other; on two "
            f"threads side by side {held:.3f} s through scipy's cho_factor, which holds the GIL "
            f"({alone / held:.2f}x), {released:.3f} s through ident3d.lapack, which lets go of it "
            f"({alone / released:.2f}x); on 2 BLAS threads one after the other {two_blas:.3f} s "
            f"({alone / two_blas:.2f}x).")

if __name__ == "__main__":
    main()
