"""``ident3d demo``: the whole flow on a small dataset, resumable, with every output's path printed.

Today: render (preview preset) -> pack -> positive pairs through a DataLoader -> evaluate a
pixel-read-out encoder exported to .pt2 and the true latents (the ceiling). Training a baseline
and the leaderboard join this flow when the ``baselines`` and ``leaderboard`` rooms land.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "render a small dataset, load positive pairs, evaluate encoders; prints every output path"
EXAMPLE = "ident3d demo --out demo-out"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("demo-out"), help="where everything goes")
    p.add_argument("--n-train", type=int, default=1000)
    p.add_argument("--n-test", type=int, default=500)
    p.add_argument("--workers", type=int, default=2, help="render processes")


def pixel_encoder():
    """The paper's "identity" row: the image itself, average-pooled to 8 x 8, as the features."""
    import torch

    class PixelReadout(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.adaptive_avg_pool2d(x, 8).flatten(1)

    return PixelReadout()


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import torch
    from torch.utils.data import DataLoader

    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import evaluate
    from ident3d.packing import pack_split
    from ident3d.pairs import ContrastivePairs
    from render.job import plan_job, render_split
    from render.settings import resolve_settings

    out = args.out.resolve()
    data = out / "data"
    progress = not args.quiet
    settings = resolve_settings("preview")
    for split, n, seed in (("train", args.n_train, 0), ("test", args.n_test, 1)):
        job = plan_job(data, split, n=n, seed=seed, variant="v2", settings=settings)
        render_split(job, workers=args.workers, progress=progress)
        if "packed" not in (ThreeDIdent(data, split).manifest or {}):
            pack_split(data, split, progress=progress)

    train = ThreeDIdent(data, "train")
    pairs = ContrastivePairs(train, conditional="normal", scale=0.1, seed=0)
    x, x_pos, z, z_pos = next(iter(DataLoader(pairs, batch_size=64)))
    spread = pairs.effective_conditional(2000)
    print(f"\n{train!r}\none batch of pairs: x {tuple(x.shape)}, z {tuple(z.shape)}; realised "
          f"positive spread per latent (asked 0.1): {[round(float(s), 3) for s in spread]}")

    models = out / "models"
    models.mkdir(parents=True, exist_ok=True)
    size = train.load_array(0).shape[0]
    program = torch.export.export(pixel_encoder().eval(), (torch.rand(2, 3, size, size),),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(program, str(models / "pixels.pt2"))
    np.save(models / "true_latents.npy", ThreeDIdent(data, "test").latents)
    results = out / "results"
    for name, file in (("pixel-readout", "pixels.pt2"), ("true-latents", "true_latents.npy")):
        result = evaluate(models / file, data, name=name, progress=progress)
        result.save(results / f"{name}.json")
        print(f"\n{name} (ident3d-eval-v1)\n{result.table()}")

    print(f"\noutputs:\n  dataset   {data}\n  models    {models}\n  results   {results}")
    return 0
