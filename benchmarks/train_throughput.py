"""Training throughput on a GPU: images/s with and without bf16 autocast, and whether the loader
keeps up (the fraction of wall time spent waiting for the next batch).

    python -m benchmarks.train_throughput [--size 64] [--n 50000] [--iterations 300] [--compile]

Rendered data is often too large to carry to a GPU machine, so this writes a packed synthetic
split on the spot: images made from uniform latents by a fixed random network (the same network
for every run), with the same layout and manifest as a rendered split.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

from baselines.config import load_preset
from baselines.train import read_log, train
from ident3d.synthetic import write_synthetic_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="image size (224 for the paper's)")
    parser.add_argument("--n", type=int, default=50_000, help="training images")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        write_synthetic_split(data, "train", args.n, args.size, seed=0, pixels="network", png=False)
        write_synthetic_split(data, "test", 2048, args.size, seed=1, pixels="network", png=False)
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; synthetic {args.size} px, "
              f"batch {args.batch_size} pairs, {args.iterations} steps, compile={args.compile}\n")
        print("| autocast | images/s | data wait (share of wall time) | final loss |")
        print("|---|---:|---:|---:|")
        for amp in (True, False):
            config = load_preset("normal-box", data=str(data), iterations=args.iterations,
                                 batch_size=args.batch_size, device="cuda", amp=amp, compile=args.compile,
                                 log_every=25, eval_every=0,
                                 checkpoint_every=max(25, args.iterations // 25 * 25))
            out = Path(tmp) / f"run-amp-{amp}"
            train(config, out, progress=False)
            records = read_log(out / "log.jsonl")[1:]  # the first window holds start-up and compilation
            rate = np.mean([r["images_per_s"] for r in records])
            wait = np.mean([r["data_wait"] for r in records])
            label = "bf16" if amp else "float32"
            print(f"| {label} | {rate:,.0f} | {wait:.3f} | {records[-1]['loss']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
