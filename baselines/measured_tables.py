"""The docs' blocks of figures a benchmark measured, made from the figures it committed.

A benchmark that measures something the docs show (``benchmarks/snapping.py``,
``benchmarks/lean_install.py``) writes its figures to ``benchmarks/measured/<name>.json`` and then
regenerates its blocks through the reports registry; the blocks are made from that file alone, so
``python -m ident3d.baselines.reports --check`` catches a number edited by hand, and only a new
measurement moves one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MEASURED = "benchmarks/measured"  # relative to the repository
SNAPPING = "snapping"
LEAN_INSTALL = "lean-install"


def measured_file(root: Path, name: str) -> Path:
    return Path(root) / MEASURED / f"{name}.json"


def load(root: Path, name: str) -> dict[str, Any]:
    return json.loads(measured_file(root, name).read_text())


def spreads_table(figures: dict[str, Any]) -> str:
    """docs/data.md: the realised spread of snapped positives, per number of rendered latents."""
    lines = ["| rendered latents | asked 0.1 for every latent | the original's positives "
             '(`anchor="pre-snap"`), 0.1 | asked 0.02 (five latents) / 0.3 (five) '
             "| asked 0.02, 0.05, 0.1, 0.2, 0.5 (twice) |",
             "|---:|---:|---:|---:|---:|"]
    for n, spread in figures["spreads"].items():
        mean = {setting: sum(values) / len(values) for setting, values in spread.items()}
        mixed = spread["mixed"]
        mixed_cell = f"{sum(mixed[:5]) / 5:.2f} / {sum(mixed[5:]) / 5:.2f}"
        ladder = ", ".join(f"{(spread['ladder'][j] + spread['ladder'][j + 5]) / 2:.2f}" for j in range(5))
        lines.append(f"| {int(n):,} | {mean['0.1']:.2f} | {mean['pre-snap 0.1']:.2f} | {mixed_cell} "
                     f"| {ladder} |")
    return "\n".join(lines)


def shapes_table(figures: dict[str, Any]) -> str:
    """docs/cpu-track.md: std and excess kurtosis of the Laplace row's two conditionals."""
    where = {"snapped": f"snapped to the track's {figures['train_n']:,} training latents (`v2-normal-box`, "
                        f"`v2-laplace-box`; {figures['shape_pairs']:,} pairs)",
             "exact": "rendered exactly (`v2pairs-normal-box`, `v2pairs-laplace-box`; every pair of the "
                      "data set)"}
    lines = ["| positives | Normal: std | Normal: excess kurtosis | Laplace: std "
             "| Laplace: excess kurtosis |",
             "|---|---:|---:|---:|---:|"]
    for how, label in where.items():
        (sn, kn), (sl, kl) = figures["shapes"][how]["normal"], figures["shapes"][how]["laplace"]
        lines.append(f"| {label} | {sn:.3f} | {kn:+.2f} | {sl:.3f} | {kl:+.2f} |")
    return "\n".join(lines)


def lean_install_line(figures: dict[str, Any]) -> str:
    """The README's measured line of the lean CPU-only install."""
    seconds = figures["torch_seconds"] + figures["core_seconds"]
    return (f"Measured (`python -m benchmarks.lean_install --torch {Path(figures['torch_install']).name}`, "
            f"torch {figures['torch']}, Python {figures['python']}): {figures['venv_mb']:,} MB on disk, "
            f"{seconds:.0f} s to install "
            f"({figures['torch_seconds']:.0f} s torch, {figures['core_seconds']:.0f} s the rest), "
            f"no NVIDIA, CUDA, bpy or torchvision package; `ident3d.evaluate` ran the sandboxed path.")
