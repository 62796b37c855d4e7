"""Lambda's trajectory in an AnInfoNCE run as a small standalone SVG (no plotting dependency).

One solid line per learned precision, coloured by the latent its feature is matched to (the
evaluator's Hungarian assignment at the end of the run), and a dashed line at that latent's true
precision; an isotropic run has one learned value, drawn in grey. A key at the right names each
latent's colour and its true precision.
"""

from __future__ import annotations

from typing import Any

from ident3d.baselines.charts import PALETTE, Chart, ticks
from ident3d.baselines.synthetic.budget import Budget


def figure_name(result: dict[str, Any]) -> str:
    """The result file's own name (row, seed, every budget field that differs), as an SVG."""
    return f"lambda-{result['row']}-seed{result['seed']}-{Budget(**result['budget']).tag()}.svg"


def has_trajectory(result: dict[str, Any]) -> bool:
    return bool(result["curve"]) and all("precision" in c for c in result["curve"])


def lambda_svg(result: dict[str, Any]) -> str:
    curve = result["curve"]
    steps = [c["step"] for c in curve]
    learned = [c["precision"] for c in curve]  # per logged step: one value per feature
    truth = result.get("precision", {}).get("true", [])
    assignment = result.get("assignment", [])
    top = max([*truth, *(v for values in learned for v in values), 1.0]) * 1.1
    shown = "learned Lambda (solid) and true precision (dashed)" if truth else "learned Lambda"
    latents = len(truth) or len(assignment)
    key_width = 120 if latents else 0
    chart = Chart(f"{result['row']} seed {result['seed']}: {shown} per matched latent", x_max=max(steps),
                  y_max=top, width=640 + key_width, margins=(56, 28 + key_width, 28, 40))
    chart.y_grid(ticks(top), "precision (no unit)")
    chart.x_labels(ticks(max(steps), 4), "training step")
    one = len(learned[0]) == 1
    for feature in range(len(learned[0])):
        latent = assignment.index(feature) if not one and feature in assignment else None
        colour = "#555" if latent is None else PALETTE[latent % len(PALETTE)]
        chart.line([(s, v[feature]) for s, v in zip(steps, learned, strict=True)], colour)
    for latent, value in enumerate(truth):
        chart.level(value, PALETTE[latent % len(PALETTE)])
    for latent in range(latents):
        text = f"z{latent + 1}" + (f" (true {truth[latent]:.3g})" if truth else "")
        chart.key(chart.right + 20, 34 + 16 * latent, PALETTE[latent % len(PALETTE)], text)
    return chart.svg()
