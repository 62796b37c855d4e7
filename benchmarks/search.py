"""FAISS benchmark: queries per second, per item (the original loader) against one batched search.

    python -m benchmarks.search [--n 250000] [--queries 4096]     (from the repository root)

Flat is exact; IVF is `IVF1024_HNSW32,Flat` at nprobe 16 (this package's default). Recall@1 of
IVF is measured against flat on the same queries.
"""

from __future__ import annotations

import argparse
import time

import faiss
import numpy as np

from ident3d.latents import sample_uniform
from ident3d.pairs import build_index


def queries_per_second(index, queries: np.ndarray, batch: int) -> tuple[float, np.ndarray]:
    found = np.empty(len(queries), dtype=np.int64)
    start = time.perf_counter()
    for i in range(0, len(queries), batch):
        _, ids = index.search(queries[i:i + batch], 1)
        found[i:i + batch] = ids[:, 0]
    return len(queries) / (time.perf_counter() - start), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=250_000)
    parser.add_argument("--queries", type=int, default=4096)
    args = parser.parse_args()
    latents = sample_uniform(args.n, seed=0)
    queries = np.random.default_rng(1).uniform(-1, 1, (args.queries, 10)).astype(np.float32)
    print(f"{args.n:,} latents, {args.queries:,} queries, faiss {faiss.__version__}, "
          f"{faiss.omp_get_max_threads()} threads\n")
    print("| index | queries | queries/s | ratio vs per-item flat | recall@1 vs flat |")
    print("|---|---|---:|---:|---:|")
    exact = None
    base = None
    for kind in ("flat", "ivf"):
        start = time.perf_counter()
        index = build_index(latents, kind, use_gpu=False)
        built = time.perf_counter() - start
        for label, batch in (("per item", 1), ("batched 512", 512)):
            qps, found = queries_per_second(index, queries, batch)
            exact = found if exact is None else exact
            base = qps if base is None else base
            print(f"| {kind} (built in {built:.1f} s) | {label} | {qps:,.0f} | {qps / base:.1f}x | "
                  f"{(found == exact).mean():.3f} |")


if __name__ == "__main__":
    main()
