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

from ident3d.leaderboard.entries import ENTRIES_DIR, load_entries

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "ood-figures"
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 720, 320, 44, 12, 44, 64
COLOURS = ("#9a9a9a", "#4e79a7", "#e15759", "#59a14f", "#b07aa1")  # in distribution, then each split


def has_ood(entry: Mapping[str, Any]) -> bool:
    return bool((entry.get("result") or {}).get("ood"))


def ood_svg(entry: Mapping[str, Any]) -> str:
    ood = entry["result"]["ood"]
    series = [("in distribution", ood["in_distribution"])] + [(s["split"], s) for s in ood["splits"]]
    factors = [row["factor"] for row in ood["in_distribution"]["per_latent"]]
    group = (WIDTH - LEFT - RIGHT) / len(factors)
    bar = group * 0.8 / len(series)

    def y(value: float) -> float:
        return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * value

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{LEFT}" y="16" font-size="12">{entry["id"]} ({entry["dataset"]}): linear read-out R² '
           'per latent, in distribution and per OOD split</text>']
    for value in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.2f}</text>')
    for k, (name, scores) in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        legend_x = LEFT + 150 * k
        out.append(f'<rect x="{legend_x}" y="26" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{legend_x + 14}" y="35">{name} ({scores["linear_r2"]:.2f})</text>')
        for j, row in enumerate(scores["per_latent"]):
            x = LEFT + group * j + group * 0.1 + bar * k
            out.append(f'<rect x="{x:.1f}" y="{y(row["linear_r2"]):.1f}" width="{bar:.1f}" '
                       f'height="{y(0) - y(row["linear_r2"]):.1f}" fill="{colour}"/>')
    for j, factor in enumerate(factors):
        x = LEFT + group * (j + 0.5)
        out.append(f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="end" '
                   f'transform="rotate(-30 {x:.1f} {HEIGHT - BOTTOM + 14})">{factor}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


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
