"""Loader benchmark: pairs per second through a DataLoader, this package against the original style.

    python -m benchmarks.loader [--n 5000] [--batches 20]     (from the repository root)

Original style: one item at a time, a PIL decode per image and one FAISS query per item (the
cl-ica loader). Same data, same cores, batch 256.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from ident3d.datasets import ThreeDIdent
from ident3d.latents import sample_conditional
from ident3d.packing import pack_split
from ident3d.pairs import ContrastivePairs, build_index
from ident3d.synthetic import write_synthetic_split


class PerItemPairs(Dataset):
    """The original's way: per item, one random draw, two FAISS queries, two PIL decodes."""

    def __init__(self, dataset: ThreeDIdent, n: int) -> None:
        self.dataset, self.n, self.index = dataset, n, None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if self.index is None:
            self.index = build_index(self.dataset.latents)
        rng = np.random.default_rng(i)
        z = rng.uniform(-1, 1, (1, 10)).astype(np.float32)
        _, a = self.index.search(z, 1)
        z_pos = sample_conditional(z, rng).astype(np.float32)
        _, p = self.index.search(z_pos, 2)
        load = lambda k: torch.from_numpy(  # noqa: E731
            np.asarray(Image.open(self.dataset.image_path(int(k))).convert("RGB")).copy())
        return load(a[0, 0]), load(p[0, 1] if p[0, 0] == a[0, 0] else p[0, 0])


def rate(dataset, workers: int, batches: int, batch: int = 256) -> float:
    loader = DataLoader(dataset, batch_size=batch, num_workers=workers,
                        persistent_workers=workers > 0)
    it = iter(loader)
    next(it)  # warm-up: workers start, indices build
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return batches * batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("png", "packed"):  # the same seeded images twice; one copy gets packed
            write_synthetic_split(Path(tmp) / name, "train", n=args.n, size=64)
        pack_split(Path(tmp) / "packed", "train", progress=False)
        png_ds = ThreeDIdent(Path(tmp) / "png", "train")
        packed_ds = ThreeDIdent(Path(tmp) / "packed", "train")
        length = 256 * (args.batches + 2)
        print(f"{args.n} images of 64 x 64, batch 256\n\n| loader | workers | pairs/s | ratio |")
        print("|---|---:|---:|---:|")
        for workers in (0, 2):
            base = rate(PerItemPairs(png_ds, length), workers, args.batches)
            print(f"| original style (per item) | {workers} | {base:.0f} | 1.00 |")
            for label, ds in (("PNG", png_ds), ("packed", packed_ds)):
                r = rate(ContrastivePairs(ds, epoch_length=length), workers, args.batches)
                print(f"| ContrastivePairs, {label} | {workers} | {r:.0f} | {r / base:.2f} |")

if __name__ == "__main__":
    main()
