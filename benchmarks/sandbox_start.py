"""Sandbox start: seconds from ``SandboxedModel(path)`` to the first features, per model in one process.

    python -m benchmarks.sandbox_start [--models 5]     (from the repository root)

The first model waits for the fork server to import torch and the rebuild code
(``ident3d.sandbox.forkserver``); every later model in the same process gets a child forked from it,
which only warms up, locks down and rebuilds the model. Also prints the imports the server saves
each later model, timed in a fresh ``python -I`` like the one the server runs. The model is the 8 x 8
pixel read-out at 64 px, so the figures are the sandbox's own cost, not a network's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from ident3d.baselines.pixels import export_pixel_readout
from ident3d.sandbox.host import SandboxedModel

IMPORTS = ("import time; t = time.perf_counter(); import torch, torch._export.serde.serialize; "
           "print(time.perf_counter() - t)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=5, help="models started one after another")
    args = parser.parse_args()
    imports = [float(subprocess.run([sys.executable, "-I", "-c", IMPORTS], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        path = export_pixel_readout(Path(tmp) / "pixels.pt2", 64)
        seconds = []
        for _ in range(args.models):
            start = time.perf_counter()
            with SandboxedModel(path, "exported-program") as model:
                model(torch.rand(2, 3, 64, 64))
                seconds.append(time.perf_counter() - start)
    later = statistics.median(seconds[1:])
    print(f"| model | seconds to the first features |\n|---|---:|\n| first (starts the fork server) | "
          f"{seconds[0]:.2f} |\n| later, median of {len(seconds) - 1} | {later:.2f} |")
    print(f"\nThe server's imports in a fresh python -I (median of 3): {statistics.median(imports):.2f} s; "
          f"first / later: {seconds[0] / later:.1f}x")


if __name__ == "__main__":
    main()
