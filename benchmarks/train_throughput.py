"""Training throughput: images/s of the baselines' training loop, on CPU or a GPU.

    python -m benchmarks.train_throughput --device cpu [--size 64] [--batch-size 128]
    python -m benchmarks.train_throughput --device cuda [--size 224] [--batch-size 512] [--compile]

Two tables. Memory layout: forward, backward and Adam steps of the `normal-box` encoder on a fixed
batch, contiguous against channels-last (what `ident3d.baselines.train` uses), with the first losses of
each so that equal maths can be seen. The loop: `ident3d.baselines.train.train` end to end on a packed
fake split written on the spot (a fixed random network of uniform latents, the layout and
manifest of a rendered split), reporting images/s and the share of wall time spent waiting for
data; on a GPU with and without bf16 autocast. Nothing on a GPU was measured on this project's
machines (README, "What was not measured here").
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from ident3d.baselines.config import load_preset
from ident3d.baselines.train import build_model, read_log, train
from ident3d.fake_splits import write_fake_split


def layout_table(device: torch.device, size: int, batch: int, steps: int = 6) -> None:
    print(f"memory layout: normal-box encoder, {batch} images of {size} px per step, {steps} timed steps\n")
    print("| layout | images/s | ratio | losses of the first 3 steps |")
    print("|---|---:|---:|---|")
    x = torch.rand(batch, 3, size, size, device=device)
    base = None
    for label, layout in (("contiguous", torch.contiguous_format), ("channels-last", torch.channels_last)):
        torch.manual_seed(0)
        model = build_model(load_preset("normal-box"), [0.5] * 3, [0.25] * 3).to(device)
        model.to(memory_format=layout)
        optimizer = torch.optim.Adam(model.parameters(), 1e-4)
        inputs, losses = x.contiguous(memory_format=layout), []
        for step in range(steps + 2):
            if step == 2:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
            loss = model(inputs).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        rate = batch * steps / (time.perf_counter() - start)
        base = base or rate
        print(f"| {label} | {rate:,.0f} | {rate / base:.2f}x | {', '.join(f'{v:.6f}' for v in losses[:3])} |",
              flush=True)


def loop_table(device: torch.device, size: int, n: int, iterations: int, batch: int, compile: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        write_fake_split(data, "train", n, size, seed=0, pixels="network", png=False)
        write_fake_split(data, "test", 512, size, seed=1, pixels="network", png=False)
        print(f"\ntraining loop: synthetic {size} px, batch {batch} pairs, {iterations} steps, "
              f"compile={compile}\n")
        print("| device | autocast | images/s | data wait (share of wall time) | final loss |")
        print("|---|---|---:|---:|---:|")
        for amp in ((True, False) if device.type == "cuda" else (False,)):
            config = load_preset("normal-box", data=str(data), iterations=iterations, batch_size=batch,
                                 device=device.type, amp=amp, compile=compile, log_every=5,
                                 eval_every=0, checkpoint_every=iterations)
            out = Path(tmp) / f"run-amp-{amp}"
            train(config, out, progress=False)
            records = read_log(out / "log.jsonl")[1:]  # the first window holds start-up and compilation
            rate = np.mean([r["images_per_s"] for r in records])
            wait = np.mean([r["data_wait"] for r in records])
            label = "bf16" if amp else "float32"
            print(f"| {device.type} | {label} | {rate:,.0f} | {wait:.3f} | {records[-1]['loss']:.3f} |",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--size", type=int, default=64, help="image size (224 for the paper's)")
    parser.add_argument("--n", type=int, default=5000, help="synthetic training images")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=128, help="pairs per step (the paper: 512)")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA GPU here")
    device = torch.device(args.device)
    name = torch.cuda.get_device_name() if device.type == "cuda" else f"{torch.get_num_threads()} CPU threads"
    print(f"{name}, torch {torch.__version__}\n")
    layout_table(device, args.size, 2 * args.batch_size)
    loop_table(device, args.size, args.n, args.iterations, args.batch_size, args.compile)


if __name__ == "__main__":
    main()
