"""Loader benchmark: pairs per second at 64 and 224 px, this package against the original style.

    python -m benchmarks.loader [--sizes 64,224] [--batches 12]     (from the repository root)

Original style: one item at a time, a PIL decode per image and FAISS queries per item (the cl-ica
loader), delivering uint8 images. This package: ``ContrastivePairs`` through a plain
``DataLoader`` (images made in the workers and collated per item) and through ``PairLoader``
(workers draw the pairs, the main process gathers the packed images), float32 or uint8. Same data,
batch 256. The limit: numpy's copy bandwidth over the bytes of a batch, and the cost of each stage
of a batch in one process.
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

from ident3d.batching import image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.extras import require
from ident3d.fake_splits import write_fake_split
from ident3d.latents import sample_conditional
from ident3d.packing import pack_split
from ident3d.pairs import ContrastivePairs, PairLoader, build_index

BATCH = 256
IMAGES = {64: 5000, 224: 1500}  # images per benchmark split


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


def rate(loader, batches: int) -> float:
    it = iter(loader)
    next(it)  # warm-up: workers start, indices build
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return batches * BATCH / (time.perf_counter() - start)


def timed(f, repeats: int = 5) -> float:
    f()
    start = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - start) / repeats


def copy_bandwidth() -> float:
    """GB/s that numpy copies between two warm 256 MB buffers."""
    src = np.ones(256 << 20, np.uint8)
    dst = np.empty_like(src)
    return src.nbytes / timed(lambda: np.copyto(dst, src)) / 1e9


def stages(packed: ThreeDIdent) -> list[tuple[str, float]]:
    """Seconds per batch of each stage, in one process on one thread (as in a worker)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    pairs = ContrastivePairs(packed)
    faiss = require("faiss")
    faiss.omp_set_num_threads(1)
    items = np.arange(BATCH)
    anchor, positive = pairs.sample_indices(items)
    both = np.concatenate([anchor, positive])
    draw = timed(lambda: pairs._uniforms(items))
    out = [("seeded per-item draws", draw),
           ("two FAISS searches (exact)", timed(lambda: pairs.sample_indices(items)) - draw),
           ("gather uint8 images", timed(lambda: packed.load_batch(both))),
           ("gather + float32", timed(lambda: image_batch(packed, both)))]
    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)
    return out


def benchmark(size: int, batches: int, tmp: Path) -> None:
    n = IMAGES[size]
    for name in ("png", "packed"):  # the same seeded images twice; one copy gets packed
        write_fake_split(tmp / name, "train", n=n, size=size)
    pack_split(tmp / "packed", "train", progress=False)
    png, packed = ThreeDIdent(tmp / "png", "train"), ThreeDIdent(tmp / "packed", "train")
    length = BATCH * (batches + 2)
    print(f"### {size} x {size} px ({n} images, batch {BATCH})\n")
    print("| loader | delivers | workers | pairs/s | vs original style |\n|---|---|---:|---:|---:|")
    for workers in (0, 1, 2):
        kw = dict(batch_size=BATCH, num_workers=workers, persistent_workers=workers > 0)
        base = rate(DataLoader(PerItemPairs(png, length), **kw), batches)
        print(f"| original style (per item) | uint8 | {workers} | {base:,.0f} | 1.0x |")
        rows = [(f"DataLoader(ContrastivePairs), {label}", "float32",
                 DataLoader(ContrastivePairs(data, epoch_length=length), **kw))
                for label, data in (("PNG", png), ("packed", packed))]
        for uint8 in (False, True):
            rows.append(("PairLoader, packed", "uint8" if uint8 else "float32",
                         PairLoader(ContrastivePairs(packed, epoch_length=length, uint8=uint8), **kw)))
        for label, delivers, loader in rows:
            r = rate(loader, batches)
            print(f"| {label} | {delivers} | {workers} | {r:,.0f} | {r / base:.1f}x |")
    image_bytes = size * size * 3
    bandwidth = copy_bandwidth()
    print(f"\nLimit: numpy copies {bandwidth:.1f} GB/s here, so reading the two images of a pair "
          f"({2 * image_bytes / 1e3:.0f} kB) alone allows {bandwidth * 1e9 / (2 * image_bytes):,.0f} "
          "pairs/s per core. A batch's stages in one process, one thread:\n")
    print("| stage | ms per batch | pairs/s alone |\n|---|---:|---:|")
    for label, seconds in stages(packed):
        print(f"| {label} | {seconds * 1e3:.1f} | {BATCH / seconds:,.0f} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,224")
    parser.add_argument("--batches", type=int, default=12)
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            benchmark(size, args.batches, Path(tmp))


if __name__ == "__main__":
    main()
