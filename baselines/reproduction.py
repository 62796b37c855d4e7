"""Summarise a small-scale reproduction (baselines/reproduce_small.sh) as Markdown.

    python -m baselines.reproduction OUT

Reads ``OUT/runs/<variant>-<preset>/result.json`` (ident3d-eval-v1, written by training) and
``result-cl-ica-2021.json``, and reports the table (with the training throughput from
``log.jsonl``), the paper's two orderings, the hue latents' R^2 on v2 against legacy data, and every
latent's R^2 for every run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ident3d.latents import FACTOR_NAMES

HUES = ("object_hue", "spotlight_hue", "ground_hue")
MARGIN = 0.05  # "well above": at least 5 percentage points


def load_runs(out: Path) -> dict[str, dict[str, Any]]:
    runs = {}
    for folder in sorted((out / "runs").iterdir()):
        if (folder / "result.json").exists() and (folder / "result-cl-ica-2021.json").exists():
            runs[folder.name] = {"v1": json.loads((folder / "result.json").read_text()),
                                 "clica": json.loads((folder / "result-cl-ica-2021.json").read_text()),
                                 "config": json.loads((folder / "config.json").read_text()),
                                 "log": [json.loads(line) for line in (folder / "log.jsonl").open()]}
    return runs


def training_minutes(run: dict[str, Any]) -> tuple[float, float]:
    """Images/s over the whole run and the minutes of training steps it implies (periodic scoring
    excluded). Every log window holds the same number of steps, so the run's rate is the harmonic
    mean of the windows' rates."""
    config = run["config"]
    speed = len(run["log"]) / sum(1 / r["images_per_s"] for r in run["log"])
    images_per_step = config["batch_size"] * (1 if config["positives"] == "anchors" else 2)
    return speed, config["iterations"] * images_per_step / speed / 60


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


def ordering(runs: dict, better: str, worse: str, metric: str) -> str:
    if better not in runs or worse not in runs:
        return f"not measured ({better} or {worse} missing)"
    a, b = runs[better]["clica"]["metrics"][metric], runs[worse]["clica"]["metrics"][metric]
    verdict = "holds" if a - b >= MARGIN else "does not hold"
    return f"{verdict}: {better} {pct(a)} vs {worse} {pct(b)} (cl-ica-2021 {metric})"


def summarize(out: Path) -> str:
    runs = load_runs(out)
    if not runs:
        return f"No finished runs under {out / 'runs'}."
    any_config = next(iter(runs.values()))["config"]
    lines = [f"Runs: {any_config['iterations']} steps at batch {any_config['batch_size']} each; test splits "
             f"of {next(iter(runs.values()))['v1']['dataset']['n']} images.\n",
             "| run | R² (cl-ica-2021) | MCC (cl-ica-2021) | R² (v1) | kernel R² (v1) | MCC (v1) "
             "| images/s | train min |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in runs.items():
        c, v = r["clica"]["metrics"], r["v1"]["metrics"]
        speed, minutes = training_minutes(r)
        lines.append(f"| {name} | {pct(c['linear_r2'])} | {pct(c['mcc_pearson'])} | {pct(v['linear_r2'])} | "
                     f"{pct(v['nonlinear_r2'])} | {pct(v['mcc_pearson'])} | {speed:.0f} | {minutes:.1f} |")
    lines += ["", "Orderings of the paper (Table 4):", "",
              "- Box R² well above Sphere R²: "
              f"{ordering(runs, 'v2-normal-box', 'v2-normal-sphere-vmf', 'linear_r2')}",
              f"- Box MCC well above Unbounded MCC: "
              f"{ordering(runs, 'v2-normal-box', 'v2-normal-unbounded', 'mcc_pearson')}", ""]
    if "v2-normal-box" in runs and "legacy-normal-box" in runs:
        lines += ["Hue latents, normal-box, per-latent R² under ident3d-eval-v1 (linear / kernel):", "",
                  "| latent | v2 | legacy |", "|---|---:|---:|"]
        for hue in HUES:
            i = FACTOR_NAMES.index(hue)
            cells = []
            for variant in ("v2", "legacy"):
                p = runs[f"{variant}-normal-box"]["v1"]["per_latent"][i]
                cells.append(f"{pct(p['linear_r2'])} / {pct(p['nonlinear_r2'])}")
            lines.append(f"| {hue} | {cells[0]} | {cells[1]} |")
        lines.append("")
    lines += ["Every latent, linear R² under ident3d-eval-v1:", "",
              "| latent | " + " | ".join(runs) + " |", "|---|" + "---:|" * len(runs)]
    for i, factor in enumerate(FACTOR_NAMES):
        lines.append(f"| {factor} | " + " | ".join(pct(r["v1"]["per_latent"][i]["linear_r2"])
                                                   for r in runs.values()) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1])))
