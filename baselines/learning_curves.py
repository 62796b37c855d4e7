"""Learning curves of the CPU track: the held-out linear R² of each latent against training steps, kept
from the runs' logs, drawn, and tabulated in docs/cpu-track.md.

    python -m ident3d.baselines.learning_curves OUT     # keep OUT/runs/*/log.jsonl's curves
    python -m ident3d.baselines.reports --write         # draw them and write the table

The runs that ask for a curve (``set = { eval_every = ... }`` in ``baselines/cpu_track.toml`` and
``baselines/cpu_track_curves.toml``) log, every ``eval_every`` steps, each latent's linear R² fitted on
one half of the first ``eval_images`` test images and scored on the other half
(``ident3d.baselines.train.quick_score``); AnInfoNCE runs log their learned Lambda (any experiment
file's runs, ``--experiment FILE --runs NAME``). Those records are kept in ``baselines/curves/RUN.json`` with
the run's preset and budget and the last step it logged (a run stopped early keeps what it reached),
drawn as ``docs/learning-curves/RUN.png`` (and ``overview.png``: every run's mean R² on one set of
axes) and tabulated between the markers of docs/cpu-track.md; ``python -m ident3d.baselines.reports
--check`` fails when the figures (by the digest each PNG carries, ``ident3d.baselines.charts.png_source``)
or the table are stale.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from ident3d import atomic
from ident3d.baselines.charts import DASHED, DOTTED, PALETTE, Chart, ticks
from ident3d.baselines.experiment import Run, load_experiment, safe_name
from ident3d.tracks import get_track
from ident3d.variants import get_variant

EXPERIMENTS = (Path(__file__).resolve().parent / "cpu_track.toml",
               Path(__file__).resolve().parent / "cpu_track_curves.toml")
CURVES = Path(__file__).resolve().parent / "curves"
OVERVIEW = "overview.png"  # every run's mean R² by step on one set of axes
STEPS = (300, 600, 1200, 2400, 4800, 7200)  # the table's columns, where a curve has them
CURVE_KEYS = {"run", "group", "preset", "budget", "factors", "last_step", "points", "lambda"}
# Runs made to find out why the contrastive arms miss the rotations (docs/cpu-track.md), not arms of the
# track: the rotations paragraph reads them apart, by run folder.
DIAGNOSTIC_RUNS = {
    "v2-normal-box-batch512": "normal-box in batches of 512 pairs, the original code's batch, for the "
                              "same 153,600 pairs",
    "v2pairs-rotations-normal-box": "normal-box on exactly rendered positives that move only the "
                                    "rotations: Normal scale 0.1 on them, 1e-4 on the other latents",
    "v2pairs-fixed-rotations-normal-box": "normal-box on exactly rendered positives that move every latent "
                                          "but the rotations: 1e-4 on them, 0.1 on the others",
}

# The settling run (docs/cpu-track.md, "Not learned yet, or not kept"): normal-box from a supervised
# trunk that reads the rotations, read apart from the track's arms; its trunk is no topline run.
SETTLING_TRUNK, SETTLING_RUN = "v2-supervised-trunk", "v2-normal-box-from-supervised"


def curve_of_run(folder: Path, run: Run, factors: list[str]) -> dict[str, Any]:
    """The periodic evaluations in a run folder's log, with the run's settings."""
    from ident3d.baselines.train import read_log

    log = read_log(folder / "log.jsonl")
    points = [{"step": r["step"], "linear_r2": r["eval"]["linear_r2"], "mcc": r["eval"]["mcc"],
               "linear_r2_per_latent": r["eval"]["linear_r2_per_latent"],
               **({"kernel_r2_per_latent": r["eval"]["kernel_r2_per_latent"]}
                  if "kernel_r2_per_latent" in r["eval"] else {})} for r in log if "eval" in r]
    lambdas = [{"step": r["step"], "precision": r["precision"]} for r in log if "precision" in r]
    return {"run": run.folder, "group": run.group, "preset": run.preset, "budget": run.budget,
            "factors": factors, "last_step": log[-1]["step"] if log else 0, "points": points,
            "lambda": lambdas}


def keep_curves(out: Path, experiment_file: Path, curves: Path = CURVES,
                only: list[str] | None = None) -> list[Path]:
    """Write the curve of every run of the experiment (or those named in ``only``) under ``out`` that
    asked for one (its ``set`` has ``eval_every``) or has logged a learned Lambda."""
    experiment = load_experiment(experiment_file)
    written = []
    for run in experiment.select(only, missing_ok=True):  # --runs may name runs of another file
        folder = Path(out) / "runs" / run.folder
        if not (folder / "log.jsonl").exists():
            continue
        data = experiment.data[run.data]
        track = data["track"] if "track" in data else experiment.data[data["test"]]["track"]
        curve = curve_of_run(folder, run, list(get_variant(get_track(track).variant).names))
        if "eval_every" not in run.overrides:  # the default's one evaluation is no curve
            curve["points"] = []
        if curve["points"] or curve["lambda"]:
            curves.mkdir(exist_ok=True)
            atomic.write_json(curves / f"{run.folder}.json", curve)
            written.append(curves / f"{run.folder}.json")
    return written


def load_curves(curves: Path = CURVES) -> list[dict[str, Any]]:
    loaded = []
    for path in sorted(curves.glob("*.json")):
        try:
            curve = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise SystemExit(f"error: {path}: not a readable JSON curve ({error}). Fix: write it again with "
                             "keep_curves.") from None
        if not isinstance(curve, dict) or set(curve) != CURVE_KEYS:
            raise SystemExit(f"error: {path}: expected a curve with the keys "
                             f"{', '.join(sorted(CURVE_KEYS))}. Fix: write it again with keep_curves.")
        if not safe_name(str(curve["run"])) or path.stem != curve["run"]:
            raise SystemExit(f"error: {path}: run {curve['run']!r} is not this file's name or not a "
                             "plain folder name. Fix: keep the file as keep_curves wrote it.")
        loaded.append(curve)
    return loaded


def curve_chart(curve: dict[str, Any]) -> Chart:
    budget = curve["budget"]
    chart = Chart(f"{curve['run']}: held-out linear R² per latent ({curve['preset']}, batch "
                  f"{budget['batch_size']}, lr {budget['lr']:g}; logged to step {curve['last_step']:,} of "
                  f"{budget['steps']:,})", x_max=budget["steps"], y_max=1.0, width=720, height=380,
                  margins=(48, 28, 64, 40), title_size=12)
    chart.y_grid([0.0, 0.25, 0.5, 0.75, 1.0], "held-out linear R² (%)", percent=True)
    chart.x_labels(ticks(budget["steps"], 6), "training step")
    for j, factor in enumerate(curve["factors"]):
        # solid, dashed and dotted in turn: latents that stay at 0 (often the three rotations, which
        # are neighbours) remain told apart where their lines coincide
        colour, dash = PALETTE[j % len(PALETTE)], (None, DASHED, DOTTED)[j % 3]
        chart.key(chart.left + 132 * (j % 5), 24 + 16 * (j // 5), colour, factor, dash=dash, line=True)
        chart.line([(p["step"], max(0.0, p["linear_r2_per_latent"][j])) for p in curve["points"]], colour,
                   dots=True, dash=dash)
    return chart


def overview_chart(groups: dict[str, list[dict[str, Any]]]) -> Chart:
    """Every logged run's mean held-out linear R² (over the latents) by step, one colour per group."""
    x_max = max(c["budget"]["steps"] for group in groups.values() for c in group)
    rows = -(-len(groups) // 2)  # the legend: two columns under the title
    chart = Chart("Held-out linear R², mean over the latents, by training step (one line per run)",
                  x_max=x_max, y_max=1.0, width=720, height=360 + 16 * rows,
                  margins=(48, 28, 32 + 16 * rows, 40), title_size=12)
    chart.y_grid([0.0, 0.25, 0.5, 0.75, 1.0], "mean held-out linear R² (%)", percent=True)
    chart.x_labels(ticks(x_max, 6), "training step")
    column = (chart.right - chart.left) / 2
    for k, (name, group) in enumerate(groups.items()):
        colour = PALETTE[k % len(PALETTE)]
        budget, seeds = group[0]["budget"], f"{len(group)} seeds" if len(group) > 1 else "1 seed"
        chart.key(chart.left + column * (k % 2), 24 + 16 * (k // 2), colour,
                  f"{name} ({budget['steps']:,} steps of {budget['batch_size']}; {seeds})")
        for curve in group:
            chart.line([(p["step"], p["linear_r2"]) for p in curve["points"]], colour, dots=True)
    return chart


def _learned(curve: dict[str, Any]) -> str:
    """What a run's logged precision is: one per output feature (AnInfoNCE) or one shared by all."""
    return "learned Lambda per output feature" if len(curve["lambda"][0]["precision"]) > 1 \
        else "learned precision shared by every feature"


def lambda_chart(curve: dict[str, Any]) -> Chart:
    """Each learned precision of an AnInfoNCE run (one line per output feature, unmatched) by step."""
    steps = [p["step"] for p in curve["lambda"]]
    values = [p["precision"] for p in curve["lambda"]]
    top = max(max(v) for v in values) * 1.1
    chart = Chart(f"{curve['run']}: {_learned(curve)} (to step {curve['last_step']:,} of "
                  f"{curve['budget']['steps']:,})", x_max=curve["budget"]["steps"],
                  y_max=top, width=720, height=380, margins=(48, 28, 64, 40), title_size=12)
    chart.y_grid(ticks(top), "learned precision (no unit)", "{:g}")
    chart.x_labels(ticks(curve["budget"]["steps"], 6), "training step")
    for feature in range(len(values[0])):
        colour = PALETTE[feature % len(PALETTE)] if len(values[0]) > 1 else "#555"
        name = f"feature {feature}" if len(values[0]) > 1 else "the shared precision"
        chart.key(chart.left + 132 * (feature % 5), 24 + 16 * (feature // 5), colour, name)
        chart.line([(s, v[feature]) for s, v in zip(steps, values, strict=True)], colour)
    return chart


def _groups(curves: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The curves that logged a read-out, by seed group, in the kept order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for curve in curves:
        if curve["points"]:
            groups.setdefault(curve["group"], []).append(curve)
    return groups


def figures(curves: list[dict[str, Any]]) -> dict[str, Chart]:
    """Every figure the kept curves give, by file name (PNG)."""
    made = {OVERVIEW: overview_chart(_groups(curves))} if _groups(curves) else {}
    made |= {f"{c['run']}.png": curve_chart(c) for c in curves if c["points"]}
    made |= {f"lambda-{c['run']}.png": lambda_chart(c) for c in curves if c["lambda"]}
    return made


def _value(group: list[dict[str, Any]], step: int, latent: int | None) -> str:
    """Percent at ``step``, the mean over the group's seeds that logged it (± sample sd for the mean
    row of several seeds); — when none did."""
    values = []
    for curve in group:
        point = next((p for p in curve["points"] if p["step"] == step), None)
        if point is not None:
            values.append(point["linear_r2"] if latent is None
                          else max(0.0, point["linear_r2_per_latent"][latent]))
    if not values:
        return "—"
    if latent is None and len(values) > 1:
        return f"{100 * statistics.fmean(values):.1f} ± {100 * statistics.stdev(values):.1f}"
    return f"{100 * statistics.fmean(values):.1f}"


def _percent_range(values: list[float]) -> str:
    low, high = 100 * min(values), 100 * max(values)
    return f"{low:.1f} %" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f} to {high:.1f} %"


def rotations_paragraph(curves: list[dict[str, Any]]) -> str:
    """What the contrastive runs read on the three rotations across their whole curves, what they read
    on the other latents at their last step, and what the supervised topline reads (held-out linear R²,
    raw: a negative value reads worse than the latent's mean)."""
    logged = [c for c in curves if c["points"]]
    diagnostics = {c["run"]: c for c in logged if c["run"] in DIAGNOSTIC_RUNS}
    apart = {*DIAGNOSTIC_RUNS, SETTLING_TRUNK, SETTLING_RUN}
    contrastive = [c for c in logged if c["preset"] != "supervised" and c["run"] not in apart]
    supervised = [c for c in logged if c["preset"] == "supervised" and c["run"] not in apart]
    if not contrastive:
        return ""
    factors = contrastive[0]["factors"]
    rotations = [j for j, name in enumerate(factors) if name.startswith("rotation")]
    others = [j for j in range(len(factors)) if j not in rotations]

    def read(runs: list[dict[str, Any]], columns: list[int], last: bool = False) -> list[float]:
        points = [p for c in runs for p in (c["points"][-1:] if last else c["points"])]
        return [p["linear_r2_per_latent"][j] for p in points for j in columns]

    longest = max(contrastive, key=lambda c: c["last_step"])
    missed = {factors[j]: sum(c["points"][-1]["linear_r2_per_latent"][j] < 0.5 for c in contrastive)
              for j in others}
    missed = {name: n for name, n in sorted(missed.items(), key=lambda item: -item[1]) if n}
    evaluations = sum(len(c["points"]) for c in contrastive)
    text = (f"**The rotations.** Across all {evaluations} logged evaluations of the "
            f"{len(contrastive)} contrastive runs ({len({c['preset'] for c in contrastive})} presets), "
            f"the three rotations' held-out linear R² lies at {_percent_range(read(contrastive, rotations))} "
            f"(raw, not clipped), the longest run's too ({longest['run']}, to step {longest['last_step']:,}: "
            f"{_percent_range(read([longest], rotations))}). At each run's last step the other {len(others)} "
            f"latents read {_percent_range(read(contrastive, others, last=True))} (median "
            f"{100 * statistics.median(read(contrastive, others, last=True)):.1f} %); ")
    below = ", ".join(f"{name} in {n} of {len(contrastive)} runs" for name, n in missed.items())
    text += f"below 50 %: {below}." if missed else "none below 50 %."
    if supervised:
        weakest = {factors[int(np.argmin(c["points"][-1]["linear_r2_per_latent"]))] for c in supervised}
        text += (f" The supervised topline ({len(supervised)} runs, to step "
                 f"{max(c['last_step'] for c in supervised):,}) reads the rotations at "
                 f"{_percent_range(read(supervised, rotations, last=True))} at its last step and the other "
                 f"{len(others)} at {_percent_range(read(supervised, others, last=True))}; its weakest "
                 f"latent: {', '.join(sorted(weakest))}.")
    text += " **The diagnostic runs** (1 seed each, not counted above):"
    for run, what in DIAGNOSTIC_RUNS.items():
        curve = diagnostics.get(run)
        if curve is None:
            text += f" {run} ({what}) is not run yet;"
            continue
        last = curve["points"][-1]
        at_last = ", ".join(f"{factors[j]} {100 * last['linear_r2_per_latent'][j]:.1f}" for j in rotations)
        text += (f" {run} ({what}) reads the rotations at {_percent_range(read([curve], rotations))} "
                 f"across its {len(curve['points'])} evaluations (at step {last['step']:,}: {at_last} %) and "
                 f"the other {len(others)} at {_percent_range(read([curve], others, last=True))} (median "
                 f"{100 * statistics.median(read([curve], others, last=True)):.1f} %);")
    return text[:-1] + "."


def _rotations_at(point: dict[str, Any], rotations: list[int], key: str) -> str:
    return " / ".join(f"{100 * point[key][j]:.1f}" for j in rotations)


def settling_paragraph(curves: list[dict[str, Any]]) -> str:
    """What the settling run reads on the rotations, evaluation by evaluation, linear and kernel R²
    (raw), beside its trunk's last evaluation; and which reading it supports (one seed: a reading of
    this run, not a verdict)."""
    by_run = {c["run"]: c for c in curves if c["points"]}
    trunk, tuned = by_run.get(SETTLING_TRUNK), by_run.get(SETTLING_RUN)
    if trunk is None or tuned is None or any("kernel_r2_per_latent" not in c["points"][-1]
                                             for c in (trunk, tuned)):
        return (f"**Not learned yet, or not kept.** The settling run ({SETTLING_RUN} from "
                f"{SETTLING_TRUNK}, `baselines/cpu_track.toml`) has no kept curve yet.")
    factors = tuned["factors"]
    rotations = [j for j, name in enumerate(factors) if name.startswith("rotation")]
    start, last = trunk["points"][-1], tuned["points"][-1]
    budget = tuned["budget"]

    def best(point: dict[str, Any]) -> float:  # the better read-out of the weakest rotation
        return min(max(point["linear_r2_per_latent"][j], point["kernel_r2_per_latent"][j]) for j in rotations)

    shown = {tuned["points"][0]["step"], 300, 600, 900, last["step"]}
    trajectory = "; ".join(f"step {p['step']:,}: {_rotations_at(p, rotations, 'linear_r2_per_latent')} "
                           f"(kernel {_rotations_at(p, rotations, 'kernel_r2_per_latent')})"
                           for p in tuned["points"] if p["step"] in shown)
    others = [j for j in range(len(factors)) if j not in rotations]
    kept, began = best(last), best(start)
    if kept >= 0.5 * began:
        reading = ("the rotations stay readable, so the from-scratch runs have not learned them yet at "
                   "this budget: the loss keeps them once they are there")
    elif kept <= 0.1:
        reading = "the rotations decay to 0, so the loss does not keep them at this budget"
    else:
        reading = ("the rotations are partly kept (more than 0.1, less than half the trunk's), so neither "
                   "reading holds alone")
    return (f"**Not learned yet, or not kept.** {SETTLING_RUN} trains normal-box at the track's contrastive "
            f"budget ({budget['steps']:,} steps of {budget['batch_size']} pairs, lr {budget['lr']:g}) from "
            f"the trunk and linear head of {SETTLING_TRUNK} (the supervised preset's first "
            f"{trunk['last_step']:,} steps, a constant learning rate, so v2-supervised's own first steps), "
            f"which reads rotation α / β / γ at {_rotations_at(start, rotations, 'linear_r2_per_latent')} % "
            f"(kernel {_rotations_at(start, rotations, 'kernel_r2_per_latent')} %) at its last evaluation. "
            f"Held-out R² of the rotations, linear (kernel), in percent: {trajectory}; the other "
            f"{len(others)} latents read {_percent_range([last['linear_r2_per_latent'][j] for j in others])} "
            f"at step {last['step']:,}. The weakest rotation's better read-out goes from "
            f"{100 * began:.1f} % to {100 * kept:.1f} %: "
            + (reading if tuned["last_step"] >= budget["steps"] else
               f"the run stopped at step {tuned['last_step']:,} of {budget['steps']:,} (the session's time "
               "ran out; `python -m ident3d.baselines.experiment baselines/cpu_track.toml OUT --runs "
               f"{SETTLING_TRUNK} {SETTLING_RUN}` trains it to the end), so neither reading is decided yet; "
               "so far the numbers point to: " + reading)
            + ". One seed: what this run shows, not a verdict with an interval.")


def section(curves: list[dict[str, Any]]) -> str:
    lines = []
    rotations = rotations_paragraph(curves)
    if rotations:
        lines += [rotations, "", settling_paragraph(curves), ""]
    if not curves:
        lines.append("No learning curve is kept yet: the runs that log one (`baselines/cpu_track.toml`, "
                     "`baselines/cpu_track_curves.toml`) have not been made.")
    for curve in curves:
        if curve["lambda"]:
            final = ", ".join(f"{v:.2f}" for v in curve["lambda"][-1]["precision"])
            lines += [f"**{curve['run']}**: {_learned(curve)} at step "
                      f"{curve['lambda'][-1]['step']:,}: {final}. Trajectory: "
                      f"[learning-curves/lambda-{curve['run']}.png](learning-curves/lambda-{curve['run']}.png).",
                      ""]
    groups = _groups(curves)
    if groups:
        lines += [f"![Mean held-out linear R² by training step, every run that logged it]"
                  f"(learning-curves/{OVERVIEW})", ""]
    for name, group in groups.items():
        budget, runs = group[0]["budget"], [c["run"] for c in group]
        drawn = ", ".join(f"[{run}](learning-curves/{run}.png)" for run in runs)
        seeds = f"{len(group)} seeds, mean ± sd for the mean row" if len(group) > 1 else "1 seed"
        reached = ", ".join(f"{c['last_step']:,}" for c in group)
        lines += [f"**{name}** ({group[0]['preset']}, {budget['steps']:,} steps of {budget['batch_size']} at "
                  f"lr {budget['lr']:g}; {seeds}; logged to step {reached}): held-out linear R² (percent, "
                  f"negatives shown as 0) at each step; — where no run logged it. Figures: {drawn}.", "",
                  "| latent | " + " | ".join(f"{s:,}" for s in STEPS) + " |",
                  "|---|" + "---:|" * len(STEPS),
                  "| mean | " + " | ".join(_value(group, s, None) for s in STEPS) + " |"]
        lines += [f"| {factor} | " + " | ".join(_value(group, s, j) for s in STEPS) + " |"
                  for j, factor in enumerate(group[0]["factors"])]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the experiment's output folder (its runs/)")
    parser.add_argument("--experiment", type=Path, action="append", help="the runs' experiment file "
                        "(repeatable; default: baselines/cpu_track.toml and baselines/cpu_track_curves.toml)")
    parser.add_argument("--runs", nargs="+", metavar="NAME", help="only these runs (as the "
                        "experiment driver's --runs selects them)")
    args = parser.parse_args(argv)
    for experiment in args.experiment or EXPERIMENTS:
        for path in keep_curves(args.out, experiment, only=args.runs):
            print(f"kept {path}")
    print("now draw them and write the table: python -m ident3d.baselines.reports --write")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
