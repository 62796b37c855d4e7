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

HERE = Path(__file__).resolve().parent
SECTIONS = [  # (title, module, what the ratios compare against)
    ("Render", "benchmarks.render", "the original's 512-sample renders (`paper`)"),
    ("Loader", "benchmarks.loader", "an original-style per-item loader (PIL decodes, FAISS query per item)"),
    ("FAISS", "benchmarks.search", "per-item queries on the exact index"),
    ("Evaluator", "benchmarks.evaluator", "the plain eager loop the evaluator used before"),
    ("Training on CPU", "benchmarks.train_throughput", "contiguous memory (the layout used before)"),
]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
    for title, module, baseline in SECTIONS:
        command = [sys.executable, "-m", module]
        if module == "benchmarks.render":
            command += ["--reference", str(args.reference)]
        print(f"running {' '.join(command[1:])}", flush=True)
        result = subprocess.run(command, cwd=HERE.parent, capture_output=True, text=True, check=True)
        about = f"ratios against {baseline}"
        parts += [f"## {title}\n", f"`python -m {module}`; {about}.\n",
                  result.stdout.strip() + "\n"]
    atomic.write_bytes(HERE / "RESULTS.md", "\n".join(parts).encode())
    print(HERE / "RESULTS.md")


if __name__ == "__main__":
    main()
