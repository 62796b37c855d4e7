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
from torch import nn

from baselines.config import load_preset
from baselines.train import read_log, train
from ident3d import atomic
from ident3d.latents import sample_uniform
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import build_manifest


def synthetic_split(root: Path, split: str, n: int, size: int, seed: int) -> None:
    """A packed split whose images are a fixed random function of the latents."""
    z = sample_uniform(n, seed)
    generator = torch.Generator().manual_seed(1234)
    net = nn.Sequential(nn.Linear(10, 256), nn.Tanh(), nn.Linear(256, 3 * 8 * 8))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) / p.shape[-1] ** 0.5)
        images = []
        for chunk in torch.from_numpy(z).split(4096):
            low = torch.sigmoid(2 * net(chunk)).view(-1, 3, 8, 8)
            x = nn.functional.interpolate(low, size=size, mode="bilinear", align_corners=False)
            images.append((x * 255).round().byte().permute(0, 2, 3, 1).numpy())
    pixels = np.concatenate(images)
    lay = SplitLayout(root, split)
    lay.folder.mkdir(parents=True, exist_ok=True)
    atomic.save_npy(lay.raw_latents, z)
    atomic.save_npy(lay.latents, z)
    atomic.save_npy(lay.packed, pixels)
    flat = pixels.reshape(-1, 3) / 255.0
    manifest = build_manifest(variant="synthetic", n=n, padding=padding_width(n),
                              renderer={"name": "benchmarks.train_throughput random network"},
                              settings={"resolution": size}, seeds={"latents": seed},
                              latents_sha256=atomic.sha256_array(z), files={},
                              image_mean=flat.mean(0).tolist(), image_std=flat.std(0).tolist())
    manifest["packed"] = {"file": lay.packed.name, "shape": list(pixels.shape), "dtype": "uint8",
                          "sha256": atomic.sha256_file(lay.packed)}
    atomic.write_json(lay.manifest, manifest)


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
        synthetic_split(data, "train", args.n, args.size, seed=0)
        synthetic_split(data, "test", 2048, args.size, seed=1)
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
