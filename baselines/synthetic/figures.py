"""Lambda's trajectory in an AnInfoNCE run as a small standalone SVG (no plotting dependency).

One solid line per learned precision, coloured by the latent its feature is matched to (the
evaluator's Hungarian assignment at the end of the run), and a dashed line at that latent's true
precision; an isotropic run has one learned value, drawn in grey.
"""

from __future__ import annotations

import math
from typing import Any

from ident3d.baselines.synthetic.run import Budget

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 56, 16, 28, 40
# ten distinguishable colours (Tableau 10)
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")


def figure_name(result: dict[str, Any]) -> str:
    """The result file's own name (row, seed, every budget field that differs), as an SVG."""
    return f"lambda-{result['row']}-seed{result['seed']}-{Budget(**result['budget']).tag()}.svg"


def has_trajectory(result: dict[str, Any]) -> bool:
    return bool(result["curve"]) and all("precision" in c for c in result["curve"])


def _ticks(top: float, count: int = 6) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) from 0 up to ``top``."""
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [step * i for i in range(int(top // step) + 1)]


def lambda_svg(result: dict[str, Any]) -> str:
    curve = result["curve"]
    steps = [c["step"] for c in curve]
    learned = [c["precision"] for c in curve]  # per logged step: one value per feature
    truth = result.get("precision", {}).get("true", [])
    assignment = result.get("assignment", [])
    top = max([*truth, *(v for values in learned for v in values), 1.0]) * 1.1
    last = max(steps)

    def x(step: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * step / last

    def y(value: float) -> float:
        return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * value / top

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{LEFT}" y="16" font-size="13">{result["row"]} seed {result["seed"]}: learned '
           'Lambda (solid) and true precision (dashed) per matched latent</text>']
    for value in _ticks(top):
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.0f}</text>')
    for value in _ticks(last, 4):
        out.append(f'<text x="{x(value):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                   f'{value:,.0f}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
               'training step</text>')
    one = len(learned[0]) == 1
    for feature in range(len(learned[0])):
        latent = assignment.index(feature) if not one and feature in assignment else None
        colour = "#555" if latent is None else PALETTE[latent % len(PALETTE)]
        points = " ".join(f"{x(s):.1f},{y(v[feature]):.1f}" for s, v in zip(steps, learned, strict=True))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{points}"/>')
    for latent, value in enumerate(truth):
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                   f'stroke="{PALETTE[latent % len(PALETTE)]}" stroke-dasharray="5 4"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
