"""In distribution versus each OOD split, for every leaderboard entry whose result has the
``ident3d-ood`` section: one small standalone SVG per entry (no plotting dependency) and one table in
docs/evaluation.md.

    python -m ident3d.baselines.reports --write --only ood-entries    # the table and docs/ood-figures/

Bars are the linear read-out's R² per latent (fitted in distribution, ``ident3d.ood``): grey in
distribution, then one colour per OOD split. The table gives each split's mean R² and the R² of the
latents its region holds out, where the split differs from the training data.
``python -m ident3d.baselines.reports --check`` fails when a committed figure or the table is stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ident3d.baselines.charts import Chart
from ident3d.leaderboard.ranking import fresh_draw, shown_result
from ident3d.tracks import get_track

FIGURES = "ood-figures"  # the figures' folder, beside docs/evaluation.md
COLOURS = ("#9a9a9a", "#4e79a7", "#e15759", "#59a14f", "#b07aa1")  # in distribution, then each split


def has_ood(entry: Mapping[str, Any]) -> bool:
    return bool(shown_result(entry).get("ood"))


def ood_svg(entry: Mapping[str, Any]) -> str:
    ood = shown_result(entry)["ood"]  # a verified entry's fresh draws
    series = [("in distribution", ood["in_distribution"])] + [(s["split"], s) for s in ood["splits"]]
    factors = [row["factor"] for row in ood["in_distribution"]["per_latent"]]
    chart = Chart(f"{entry['id']} ({entry['dataset']}): linear read-out R² per latent, in distribution and "
                  "per OOD split", x_max=1.0, y_max=1.0, width=720, height=320, margins=(44, 12, 44, 64),
                  title_size=12)
    group = (chart.right - chart.left) / len(factors)
    bar = group * 0.8 / len(series)
    chart.y_grid([0.0, 0.25, 0.5, 0.75, 1.0], "linear read-out R² (%)", percent=True)
    chart.x_categories("latent")
    for k, (name, scores) in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        chart.key(chart.left + 150 * k, 26, colour, f"{name} ({100 * scores['linear_r2']:.1f}%)")
        for j, row in enumerate(scores["per_latent"]):
            chart.bar(chart.left + group * j + group * 0.1 + bar * k, bar, row["linear_r2"], colour)
    for j, factor in enumerate(factors):
        chart.slanted(chart.left + group * (j + 0.5), factor)
    return chart.svg()


def figures(entries: list[Mapping[str, Any]]) -> dict[str, str]:
    """File name -> SVG for every entry with an OOD section."""
    return {f"{entry['id']}.svg": ood_svg(entry) for entry in entries if has_ood(entry)}


def _held_out(scores: Mapping[str, Any], factors: list[str]) -> str:
    rows = {row["factor"]: row for row in scores["per_latent"]}
    return ", ".join(f"{f} {100 * rows[f]['linear_r2']:.1f} / {100 * rows[f]['kernel_r2']:.1f}"
                     for f in factors)


def section(entries: list[Mapping[str, Any]]) -> str:
    """The tables of docs/evaluation.md: per entry (ident3d-eval-v1 entries with the OOD section), the
    in-distribution score half and each OOD split, mean linear / kernel R², and the same for the latents
    the split's region holds out; then the entry's figure."""
    shown = [e for e in entries if has_ood(e) and e["protocol"] == "ident3d-eval-v1"]
    lines = []
    if not shown:
        lines.append("No entry has an OOD section yet.")
    for entry in shown:
        ood, regions = shown_result(entry)["ood"], get_track(entry["dataset"].split("@")[0]).regions
        within, draw = ood["in_distribution"], fresh_draw(entry)
        lines += [f"**{entry['name']}** (`{entry['id']}`, {entry['dataset']}): linear / kernel R² in "
                  "percent, against each latent's in-distribution variance.", "",
                  "| scored on | mean R² | R² of the latents its region holds out |", "|---|---:|---|",
                  f"| in distribution ({'score half of test' if draw is None else 'fresh draw'}) | "
                  f"{100 * within['linear_r2']:.1f} / "
                  f"{100 * within['kernel_r2']:.1f} | "
                  f"{_held_out(within, [f for r in regions.values() for f in r])} |"]
        for split in ood["splits"]:
            held = list(regions.get(split["split"].removeprefix("test-"), {}))
            lines.append(f"| {split['split']} ({split['n']:,} images) | {100 * split['linear_r2']:.1f} / "
                         f"{100 * split['kernel_r2']:.1f} | {_held_out(split, held) if held else '–'} |")
        lines += ["", f"![Linear R² per latent of {entry['name']}, in distribution and on each OOD split]"
                      f"({FIGURES}/{entry['id']}.svg)", ""]
    return "\n".join(lines)

