"""Run every benchmark and write benchmarks/RESULTS.md (what `make bench` does).

    python -m benchmarks.report [--reference DIR]     (from the repository root)

Each benchmark prints a Markdown section; this script adds the machine and the versions, and
writes the file atomically. ``--reference`` keeps the 512-sample `paper` renders between runs
(`make bench` uses benchmarks/.cache/render).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ident3d import atomic
from ident3d.devices import cpu_model

HERE = Path(__file__).resolve().parent
BEFORE = "c1d7689"  # main before the speed work (issue "Speed toward the limit"); same machine
SECTIONS = [  # (title, module, what the ratios compare against, the figures at BEFORE)
    ("Render", "benchmarks.render", "the original's 512-sample renders (`paper`)",
     "`standard` (4 samples, accurate prefilter) 0.78 s/image with start-up, 32x paper (25.15 s), "
     "worst image 0.82/255; `preview` 33.8 images/s with 1 worker, 39.7 with 2, start-up included"),
    ("Loader", "benchmarks.loader", "an original-style per-item loader (PIL decodes, FAISS query per item)",
     "64 px only: packed 12,678 pairs/s without workers (15.1x), 10,152 with 2 (6.2x); 224 px not "
     "measured"),
    ("FAISS", "benchmarks.search", "per-item queries on the exact index", "unchanged code"),
    ("Evaluator", "benchmarks.evaluator", "the plain eager loop the evaluator used before",
     "30.4 s per 1,000 images at 224 px"),
    ("Training on CPU", "benchmarks.train_throughput", "contiguous memory (the layout used before)",
     "about 170 images/s at 64 px"),
]


def versions() -> str:
    out = []
    for dist in ("ident3d", "torch", "torchvision", "faiss-cpu", "bpy", "numpy"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            continue
    return ", ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=HERE / ".cache" / "render")
    args = parser.parse_args()
    parts = ["# Benchmark results\n",
             "Written by `make bench` (`python -m benchmarks.report`); numbers are from one run.\n",
             f"- machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
             f"- Python {platform.python_version()}; {versions()}\n"]
    for title, module, baseline, before in SECTIONS:
        command = [sys.executable, "-m", module]
        if module == "benchmarks.render":
            command += ["--reference", str(args.reference)]
        print(f"running {' '.join(command[1:])}", flush=True)
        result = subprocess.run(command, cwd=HERE.parent, capture_output=True, text=True, check=True)
        about = f"ratios against {baseline}"
        parts += [f"## {title}\n", f"`python -m {module}`; {about}.\n",
                  result.stdout.strip() + "\n", f"Before (main at {BEFORE}): {before}.\n"]
    atomic.write_bytes(HERE / "RESULTS.md", "\n".join(parts).encode())
    print(HERE / "RESULTS.md")


if __name__ == "__main__":
    main()
