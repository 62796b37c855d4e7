"""Summarise the CPU-track baselines (an experiment run by ident3d.baselines.experiment) as Markdown.

    python -m ident3d.baselines.reproduction OUT      # the report, on stdout (the driver writes it too)

Reads every ``OUT/runs/<run>/``: ``experiment.json`` (its seed group), a result per protocol
(``ident3d.protocols.result_file``) and, for trained runs, ``config.json`` and
``log.jsonl``. Runs of one seed group are reported as mean ± std. The report holds the table
(with training throughput and minutes), the orderings of the paper's Table 4, the hue latents on
v2 against legacy data, and every latent's R² for every run.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr

from ident3d.baselines.anisotropy import learned_precision as matched_precision
from ident3d.baselines.relations import arms_of, arms_paper, relation_lines
from ident3d.leaderboard.entries import ENTRIES_DIR, load_entries
from ident3d.manifest import read_manifest
from ident3d.protocols import REGISTRY, result_file

V1, CLICA = "ident3d-eval-v1", "cl-ica-2021"  # the two protocols the report sets side by side
HUES = ("object_hue", "spotlight_hue", "ground_hue")


def paired_spec(config: dict[str, Any]) -> dict[str, Any]:
    """The ``pairs`` record (conditional, scale) of a rendered-pairs run's training split."""
    return read_manifest(Path(config["data"]) / config["train_split"] / "manifest.json")["pairs"]


def load_runs(out: Path) -> dict[str, dict[str, Any]]:
    runs = {}
    for folder in sorted((out / "runs").iterdir()) if (out / "runs").is_dir() else []:
        needed = (*(result_file(protocol) for protocol in REGISTRY), "experiment.json")
        if not all((folder / name).exists() for name in needed):
            continue
        record = json.loads((folder / "experiment.json").read_text())
        run = {"folder": folder,
               "results": {p: json.loads((folder / result_file(p)).read_text()) for p in REGISTRY},
               **{k: record[k] for k in ("group", "preset", "data")},
               "config": None, "log": []}
        if (folder / "config.json").exists():
            run["config"] = json.loads((folder / "config.json").read_text())
            run["log"] = [json.loads(line) for line in (folder / "log.jsonl").open()]
        runs[folder.name] = run
    return runs


def groups(runs: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Run folders by their seed group (``experiment.json``, written by the driver)."""
    out: dict[str, list[str]] = {}
    for name, run in runs.items():
        out.setdefault(run["group"], []).append(name)
    return out


def training_minutes(run: dict[str, Any]) -> tuple[float, float] | None:
    """Images/s over the whole run and the minutes of training steps it implies (periodic scoring
    excluded); None for a run without training. Every log window holds the same number of steps,
    so the run's rate is the harmonic mean of the windows' rates."""
    config, log = run["config"], [r for r in run["log"] if "images_per_s" in r]
    if config is None or not log:
        return None
    speed = len(log) / sum(1 / r["images_per_s"] for r in log)
    images_per_step = config["batch_size"] * (1 if config["positives"] == "anchors" else 2)
    return speed, config["iterations"] * images_per_step / speed / 60


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


def group_metric(runs: dict, group: list[str], protocol: str, metric: str) -> tuple[float, float | None]:
    values = [runs[name]["results"][protocol]["metrics"][metric] for name in group]
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def mean_std(runs: dict, group: list[str], protocol: str, metric: str) -> str:
    mean, std = group_metric(runs, group, protocol, metric)
    return pct(mean) if std is None else f"{pct(mean)} ± {pct(std)}"


def summarize(out: Path) -> str:
    runs = load_runs(out)
    if not runs:
        return f"No finished runs under {out / 'runs'}."
    by_group = groups(runs)
    test_n = next(iter(runs.values()))["results"][V1]["dataset"]["n"]
    lines = [f"Test splits of {test_n:,} images. Groups of seeds: mean ± std (sample std).\n",
             "| run | seeds | R² (cl-ica-2021) | MCC (cl-ica-2021) | R² (v1) | kernel R² (v1) | MCC (v1) "
             "| steps × batch | images/s | train min |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for group, names in by_group.items():
        cells = [mean_std(runs, names, CLICA, "linear_r2"), mean_std(runs, names, CLICA, "mcc_pearson"),
                 mean_std(runs, names, V1, "linear_r2"), mean_std(runs, names, V1, "nonlinear_r2"),
                 mean_std(runs, names, V1, "mcc_pearson")]
        timing = [training_minutes(runs[name]) for name in names]
        config = runs[names[0]]["config"]
        if config is None or None in timing:
            budget, speed, minutes = "none", "–", "–"
        else:
            budget = f"{config['iterations']:,} × {config['batch_size']}"
            speed = f"{statistics.fmean(t[0] for t in timing):.0f}"
            minutes = f"{statistics.fmean(t[1] for t in timing):.1f}"
        lines.append(f"| {group} | {len(names)} | " + " | ".join(cells)
                     + f" | {budget} | {speed} | {minutes} |")
    v2 = [(run["preset"], run["results"][CLICA]["metrics"]) for run in runs.values() if run["data"] == "v2"]
    lines += ["", "Relations of the paper's Table 4 (cl-ica-2021; ident3d.baselines.relations):", "",
              *relation_lines(arms_of(v2), arms_paper(load_entries(ENTRIES_DIR))), ""]
    if "v2-normal-box" in by_group and "legacy-normal-box" in by_group:
        lines += ["Hue latents, normal-box, per-latent R² under ident3d-eval-v1 (linear / kernel; seed "
                  "mean):", "", "| latent | v2 | legacy |", "|---|---:|---:|"]
        for hue in HUES:
            cells = []
            for variant in ("v2", "legacy"):
                names = by_group[f"{variant}-normal-box"]
                i = latent_names(runs[names[0]]).index(hue)
                rows = [runs[n]["results"][V1]["per_latent"][i] for n in names]
                linear = statistics.fmean(row["linear_r2"] for row in rows)
                kernel = statistics.fmean(row["nonlinear_r2"] for row in rows)
                cells.append(f"{pct(linear)} / {pct(kernel)}")
            lines.append(f"| {hue} | {cells[0]} | {cells[1]} |")
        lines.append("")
    lines += anisotropic_section(by_group, runs)
    lines += snapped_section(by_group, runs)
    lines += ["Every latent, linear R² under ident3d-eval-v1:", "",
              "| latent | " + " | ".join(runs) + " |", "|---|" + "---:|" * len(runs)]
    for i, factor in enumerate(latent_names(next(iter(runs.values())))):
        lines.append(f"| {factor} | " + " | ".join(pct(r["results"][V1]["per_latent"][i]["linear_r2"])
                                                   for r in runs.values()) + " |")
    return "\n".join(lines) + "\n"


def latent_names(run: dict[str, Any]) -> list[str]:
    """The latents of a run's dataset, in the order its result scores them."""
    return [p["factor"] for p in run["results"][V1]["per_latent"]]


def learned_precision(run: dict[str, Any]) -> list[float]:
    """The last Lambda a run logged, entry i belonging to latent i (``anisotropy.learned_precision``)."""
    logged = {"lambda": [{"step": r["step"], "precision": r["precision"]}
                         for r in run["log"] if "precision" in r]}
    return matched_precision(logged, run["results"][V1]["matching"])[1]


def anisotropic_section(by_group: dict, runs: dict) -> list[str]:
    """AnInfoNCE against its isotropic control on the same rendered pairs: per-latent R² and MCC,
    the learned Lambda against the positive scales, and the verdict on the paper's claim."""
    aniso, iso = by_group.get("v2pairs-aninfonce"), by_group.get("v2pairs-aninfonce-isotropic")
    if not (aniso and iso):
        return []
    a, i = runs[aniso[0]], runs[iso[0]]
    scale = paired_spec(a["config"])["scale"]
    scale = scale if isinstance(scale, list) else [scale] * len(latent_names(a))
    lam = learned_precision(a)
    rho = spearmanr(lam, [1 / s**2 for s in scale]).statistic
    lines = ["AnInfoNCE against isotropic InfoNCE on the same exactly rendered pairs (ident3d-eval-v1, "
             "linear R² / MCC; Lambda: AnInfoNCE's learned precision of the feature matched to the latent):",
             "", "| latent | positive scale | Lambda | R² AnInfoNCE | R² isotropic | MCC AnInfoNCE "
             "| MCC isotropic |", "|---|---:|---:|---:|---:|---:|---:|"]
    for k, factor in enumerate(latent_names(a)):
        pa, pi = a["results"][V1]["per_latent"][k], i["results"][V1]["per_latent"][k]
        lines.append(f"| {factor} | {scale[k]:g} | {lam[k]:.3g} | {pct(pa['linear_r2'])} | "
                     f"{pct(pi['linear_r2'])} | {pct(pa['mcc_pearson'])} | {pct(pi['mcc_pearson'])} |")
    wide = [k for k, s in enumerate(scale) if s > statistics.median(scale)]
    gain = statistics.fmean(a["results"][V1]["per_latent"][k]["linear_r2"]
                            - i["results"][V1]["per_latent"][k]["linear_r2"]
                            for k in wide)
    lines += ["", f"Rank correlation of the learned Lambda with 1/scale² (Spearman): {rho:.2f}. "
              f"On the {len(wide)} latents with the widest positives, AnInfoNCE's linear R² is "
              f"{100 * gain:+.2f} points above isotropic InfoNCE. One seed per arm: an indication, not a "
              "verdict (a verdict needs 3 seeds per arm).", ""]
    return lines


def realised_spread(config: dict[str, Any], n: int = 5000) -> list[float]:
    """Per-latent std of z_pos - z over ``n`` training pairs of a run: exact pairs from the paired
    split's latents, snapped pairs through ``ContrastivePairs.effective_conditional``."""
    from ident3d.datasets import ThreeDIdent
    from ident3d.pairs import ContrastivePairs

    dataset = ThreeDIdent(config["data"], config["train_split"])
    if config["positives"] == "rendered":
        z = dataset.latents[: 2 * n]
        return (z[1::2] - z[0::2]).std(axis=0).tolist()
    pairs = ContrastivePairs(dataset, conditional=config["conditional"], scale=config["scale"],
                             seed=config["seed"])
    return pairs.effective_conditional(n).tolist()


def snapped_section(by_group: dict, runs: dict) -> list[str]:
    """The same AnInfoNCE preset trained on snapped pairs of the track's split and on exactly
    rendered pairs: the realised spread per latent and what the encoders recovered."""
    snapped, exact = by_group.get("v2-aninfonce"), by_group.get("v2pairs-aninfonce")
    if not (snapped and exact):
        return []
    s, e = runs[snapped[0]], runs[exact[0]]
    asked = paired_spec(e["config"])["scale"]
    spread_s, spread_e = realised_spread(s["config"]), realised_spread(e["config"])
    lines = ["Snapped against exactly rendered positives, AnInfoNCE, same scales and budget (spread: the "
             "realised std of z_pos - z; R²: linear, ident3d-eval-v1):", "",
             "| latent | asked | spread snapped | spread exact | R² snapped | R² exact |",
             "|---|---:|---:|---:|---:|---:|"]
    for k, factor in enumerate(latent_names(s)):
        r2 = [pct(run["results"][V1]["per_latent"][k]["linear_r2"]) for run in (s, e)]
        lines.append(f"| {factor} | {asked[k]:g} | {spread_s[k]:.3f} | {spread_e[k]:.3f} "
                     f"| {r2[0]} | {r2[1]} |")
    rho_s = spearmanr(spread_s, asked).statistic
    rho_e = spearmanr(spread_e, asked).statistic
    lines += ["", f"Rank correlation of the realised spread with the asked scales: snapped {rho_s:.2f}, "
              f"exact {rho_e:.2f}. Mean R²: snapped {pct(s['results'][V1]['metrics']['linear_r2'])}, exact "
              f"{pct(e['results'][V1]['metrics']['linear_r2'])}.", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder given to ident3d.baselines.experiment")
    print(summarize(parser.parse_args(argv).out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
