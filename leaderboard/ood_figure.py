"""In distribution versus each OOD split, per latent: one small standalone SVG per leaderboard entry
whose result has the ``ident3d-ood`` section (no plotting dependency).

    python -m ident3d.leaderboard.ood_figure --write     # docs/ood-figures/<entry id>.svg

Bars are the linear read-out's R² (fitted in distribution, ``ident3d.ood``): grey in distribution,
then one colour per OOD split. ``tests/test_ood.py`` fails when a committed figure is stale.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ident3d.charts import Chart
from ident3d.leaderboard.entries import ENTRIES_DIR, load_entries

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "ood-figures"
COLOURS = ("#9a9a9a", "#4e79a7", "#e15759", "#59a14f", "#b07aa1")  # in distribution, then each split


def has_ood(entry: Mapping[str, Any]) -> bool:
    return bool((entry.get("result") or {}).get("ood"))


def ood_svg(entry: Mapping[str, Any]) -> str:
    ood = entry["result"]["ood"]
    series = [("in distribution", ood["in_distribution"])] + [(s["split"], s) for s in ood["splits"]]
    factors = [row["factor"] for row in ood["in_distribution"]["per_latent"]]
    chart = Chart(f"{entry['id']} ({entry['dataset']}): linear read-out R² per latent, in distribution and "
                  "per OOD split", x_max=1.0, y_max=1.0, width=720, height=320, margins=(44, 12, 44, 64),
                  title_size=12)
    group = (chart.right - chart.left) / len(factors)
    bar = group * 0.8 / len(series)
    chart.y_grid([0.0, 0.25, 0.5, 0.75, 1.0], "{:.2f}")
    for k, (name, scores) in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        chart.key(chart.left + 150 * k, 26, colour, f"{name} ({scores['linear_r2']:.2f})")
        for j, row in enumerate(scores["per_latent"]):
            chart.bar(chart.left + group * j + group * 0.1 + bar * k, bar, row["linear_r2"], colour)
    for j, factor in enumerate(factors):
        chart.slanted(chart.left + group * (j + 0.5), factor)
    return chart.svg()


def figures(entries_dir: Path = ENTRIES_DIR) -> dict[str, str]:
    """File name -> SVG for every entry with an OOD section."""
    return {f"{entry['id']}.svg": ood_svg(entry) for entry in load_entries(entries_dir) if has_ood(entry)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the figures into {FIGURES}")
    args = parser.parse_args(argv)
    made = figures()
    if args.write:
        FIGURES.mkdir(exist_ok=True)
        for stale in FIGURES.glob("*.svg"):
            if stale.name not in made:
                stale.unlink()
        for name, svg in made.items():
            (FIGURES / name).write_text(svg)
    print("\n".join(sorted(made)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
