"""AnInfoNCE on the CPU track, computed from leaderboard entries and the Lambda the runs logged.

    python -m ident3d.baselines.reports --write --only NAME    # write it (ident3d.baselines.reports)

Rusak et al. (AISTATS 2025): when positives vary each latent by a different amount, AnInfoNCE
(InfoNCE on L2-normalised outputs with a learned diagonal precision Lambda) recovers the latents up
to permutation and learns the precisions' order, where InfoNCE with one precision for every latent
does not (their controlled experiment; docs/synthetic.md rows A.1-A.4). Here three arms train on the
same exactly rendered pairs (data set ``v2pairs-moderate`` of ``baselines/cpu_track.toml``: one
distinct scale per latent) and are scored under ident3d-eval-v1: AnInfoNCE (``aninfonce-sphere``), its
isotropic control (``aninfonce-isotropic-sphere``) and L2 InfoNCE on Unbounded outputs
(``normal-unbounded``). Each difference of seed means gets a 95% Welch t interval and a direction only
with at least ``MIN_SEEDS`` seeds per arm (``relations``' rule), in linear R², kernel R² and MCC. The
learned Lambda is the last one a run logged (kept in ``baselines/curves/RUN.json`` by
``ident3d.baselines.learning_curves``), each latent given the precision of the output feature the
evaluator matched to it.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field

from scipy.stats import spearmanr

from ident3d.baselines import presets
from ident3d.baselines.experiment import load_experiment
from ident3d.baselines.learning_curves import CURVES
from ident3d.baselines.relations import EXPERIMENT, MIN_SEEDS, Arm, arm_of, difference_text

PROTOCOL, DATA = "ident3d-eval-v1", "v2pairs-moderate"
ANINFONCE, ISOTROPIC, L2 = "aninfonce-sphere", "aninfonce-isotropic-sphere", "normal-unbounded"
ARMS = {ANINFONCE: "AnInfoNCE", ISOTROPIC: "isotropic control", L2: "L2 InfoNCE, Unbounded"}
METRICS = {"linear_r2": "linear R²", "nonlinear_r2": "kernel R²", "mcc_pearson": "MCC"}
READ = 0.5  # a seed "reads" a latent whose linear R² reaches this
DRIFT_STEPS = 200


@dataclass
class Seeds:
    """One arm's entries: their metrics, per-latent results, and each seed's learned Lambda per latent."""

    metrics: dict[str, list[float]] = field(default_factory=dict)
    per_latent: list[list[dict]] = field(default_factory=list)
    precision: list[tuple[int, list[float]]] = field(default_factory=list)  # (step, Lambda by latent)
    drift: list[float] = field(default_factory=list)  # largest relative change over the last DRIFT_STEPS


def learned_precision(curve: dict, matching: list[int]) -> tuple[int, list[float]]:
    """The last Lambda a run logged, entry i belonging to latent i through the evaluator's matching of
    output features to latents; an isotropic run's one value stands for every latent."""
    last = curve["lambda"][-1]
    values = last["precision"] * len(matching) if len(last["precision"]) == 1 else last["precision"]
    return last["step"], [values[feature] for feature in matching]


def drift(curve: dict) -> float:
    """The largest relative change of any learned precision over the run's last ``DRIFT_STEPS`` logged
    steps: how far Lambda still was from settling when training stopped."""
    last = curve["lambda"][-1]
    earlier = [p for p in curve["lambda"] if p["step"] <= last["step"] - DRIFT_STEPS]
    if not earlier:
        return float("nan")
    return max(abs(b / a - 1) for a, b in zip(earlier[-1]["precision"], last["precision"], strict=True))


def arm_seeds(entries: list[dict]) -> dict[str, Seeds]:
    """Per preset of the runs on ``DATA``: the verified ident3d-eval-v1 entries of its seeds."""
    experiment = load_experiment(EXPERIMENT)
    prefix = experiment.entry_prefix + "_"
    runs = {run.folder: run for run in experiment.runs if run.data == DATA}
    out: dict[str, Seeds] = {}
    for entry in sorted(entries, key=lambda e: e["id"]):
        folder = entry["id"].removeprefix(prefix)
        if entry["protocol"] != PROTOCOL or folder not in runs or not entry["id"].startswith(prefix):
            continue
        seeds = out.setdefault(runs[folder].preset, Seeds())
        for metric in METRICS:
            seeds.metrics.setdefault(metric, []).append(entry["metrics"][metric])
        seeds.per_latent.append(entry["result"]["per_latent"])
        curve = CURVES / f"{folder}.json"
        logged = json.loads(curve.read_text()) if curve.exists() else {"lambda": []}
        if logged["lambda"]:
            seeds.precision.append(learned_precision(logged, entry["result"]["matching"]))
            seeds.drift.append(drift(logged))
    return out


def _arm(arms: dict[str, Seeds], preset: str, metric: str) -> Arm | None:
    seeds = arms.get(preset)
    return arm_of(preset, seeds.metrics[metric]) if seeds else None


def _mean_sd(arm: Arm | None) -> str:
    if arm is None:
        return "not measured"
    return f"{100 * arm.mean:.2f}" + ("" if arm.sd is None else f" ± {100 * arm.sd:.2f}")


def _latent_mean(seeds: Seeds | None, k: int, readout: str) -> str:
    if seeds is None:
        return "–"
    return f"{100 * statistics.fmean(p[k][readout] for p in seeds.per_latent):.1f}"


def arms_lines(arms: dict[str, Seeds]) -> list[str]:
    lines = ["| arm | preset | seeds | linear R² | kernel R² | MCC |", "|---|---|---:|---:|---:|---:|"]
    for preset, name in ARMS.items():
        n = len(arms[preset].per_latent) if preset in arms else 0
        lines.append(f"| {name} | `{preset}` | {n} | "
                     + " | ".join(_mean_sd(_arm(arms, preset, m)) for m in METRICS) + " |")
    return lines


def differences_lines(arms: dict[str, Seeds]) -> list[str]:
    lines = ["| difference | " + " | ".join(METRICS.values()) + " |", "|---|---|---|---|"]
    for other in (ISOTROPIC, L2):
        cells = []
        for metric in METRICS:
            a, b = _arm(arms, ANINFONCE, metric), _arm(arms, other, metric)
            cells.append("not measured" if a is None or b is None else difference_text(a, b))
        lines.append(f"| AnInfoNCE - {ARMS[other]} | " + " | ".join(cells) + " |")
    return lines


def latent_lines(arms: dict[str, Seeds], scale: list[float]) -> list[str]:
    """Each latent's positive scale, AnInfoNCE's learned Lambda and every arm's R² (seed means)."""
    learned = arms[ANINFONCE].precision if ANINFONCE in arms else []
    lines = ["| latent | positive scale | Lambda (AnInfoNCE) | linear R²: AnInfoNCE / isotropic / L2 "
             "| kernel R²: AnInfoNCE / isotropic / L2 |", "|---|---:|---:|---|---|"]
    names = [p["factor"] for p in next(s.per_latent[0] for s in arms.values() if s.per_latent)]
    for k, factor in enumerate(names):
        lam = f"{statistics.fmean(p[k] for _, p in learned):.3g}" if learned else "–"
        r2 = [" / ".join(_latent_mean(arms.get(p), k, readout) for p in ARMS)
              for readout in ("linear_r2", "nonlinear_r2")]
        lines.append(f"| {factor} | {scale[k]:g} | {lam} | {r2[0]} | {r2[1]} |")
    return lines


def _percents(changes: list[float]) -> str:
    """Relative changes as whole percents, – for a run that logged too few steps to have one."""
    return ", ".join("–" if math.isnan(c) else f"{100 * c:.0f}" for c in changes)


def precision_lines(arms: dict[str, Seeds], scale: list[float]) -> list[str]:
    """How well each AnInfoNCE seed's Lambda orders the latents as their true precisions 1/scale² do."""
    seeds = arms.get(ANINFONCE)
    if seeds is None or not seeds.precision:
        return ["No AnInfoNCE run has a logged Lambda yet."]
    truth = [1 / s ** 2 for s in scale]
    rhos, rhos_read = [], []
    for (_, learned), per_latent in zip(seeds.precision, seeds.per_latent, strict=True):
        rhos.append(f"{spearmanr(learned, truth).statistic:+.2f}")
        read = [k for k, latent in enumerate(per_latent) if latent["linear_r2"] >= READ]
        rho = f"{spearmanr([learned[k] for k in read], [truth[k] for k in read]).statistic:+.2f}" \
            if len(read) > 2 else "–"
        rhos_read.append(f"{rho} ({len(read)} latents)")
    control = arms.get(ISOTROPIC, Seeds())
    shared = [p[0] for _, p in control.precision]
    text = (f"Rank correlation (Spearman) of each AnInfoNCE seed's learned Lambda (step "
            f"{', '.join(f'{step:,}' for step, _ in seeds.precision)}) with the true precisions 1/scale²: "
            f"{', '.join(rhos)} over the ten latents; {', '.join(rhos_read)} over the latents the seed "
            f"reads (linear R² of {100 * READ:.0f} percent or more). A latent a seed does not read is "
            "matched to an arbitrary feature, so its Lambda says nothing about that latent. Over the last "
            f"{DRIFT_STEPS} logged steps the learned precisions still changed by up to "
            f"{_percents(seeds.drift)} percent (per seed, the largest relative "
            "change of any of them).")
    if shared:
        text += (f" The isotropic control's one learned precision: {', '.join(f'{v:.3g}' for v in shared)}, "
                 f"changed over the last {DRIFT_STEPS} logged steps by "
                 f"{_percents(control.drift)} percent.")
    return [text]


def section(entries: list[dict]) -> str:
    arms = arm_seeds(entries)
    scale = list(presets.read(ANINFONCE)["scale"])  # the preset's file: no model code imported
    return "\n".join([
        f"The three arms on the same {DATA} pairs ({PROTOCOL}, mean ± sample sd over seeds):", "",
        *arms_lines(arms), "",
        f"AnInfoNCE minus each other arm: the difference of the seed means with its 95% Welch t interval "
        f"(a direction needs {MIN_SEEDS} seeds per arm):", "",
        *differences_lines(arms), "",
        "Per latent (seed means, percent):", "",
        *latent_lines(arms, scale), "",
        *precision_lines(arms, scale)])

