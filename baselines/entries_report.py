"""The CPU track's verified entries as the tables of docs/cpu-track.md: every seed group's scores under
both protocols, and each latent's linear R², computed from the committed entries (the run folders are
not kept; the entries are what anyone can re-score).

    python -m ident3d.baselines.reports --write --only NAME    # write it (ident3d.baselines.reports)
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from ident3d.baselines.experiment import Run, load_experiment
from ident3d.baselines.relations import EXPERIMENT
from ident3d.protocols import REGISTRY

COLUMNS = (("cl-ica-2021", "linear_r2", "R² (cl-ica-2021)"),
           ("cl-ica-2021", "mcc_pearson", "MCC (cl-ica-2021)"),
           ("ident3d-eval-v1", "linear_r2", "R² (v1)"),
           ("ident3d-eval-v1", "nonlinear_r2", "kernel R² (v1)"),
           ("ident3d-eval-v1", "mcc_pearson", "MCC (v1)"))


def _spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{100 * values[0]:.2f}"
    return f"{100 * statistics.fmean(values):.2f} ± {100 * statistics.stdev(values):.2f}"


def grouped(entries: list[Mapping[str, Any]]) -> dict[str, list[tuple[Run, dict[str, Mapping[str, Any]]]]]:
    """Per seed group of the experiment, in its order: each run that has entries, with its entry per
    protocol."""
    experiment = load_experiment(EXPERIMENT)
    by_key = {(entry["protocol"], entry["id"]): entry for entry in entries}
    groups: dict[str, list[tuple[Run, dict[str, Mapping[str, Any]]]]] = {}
    for run in experiment.runs:
        found = {protocol: by_key[protocol, experiment.entry_id(run)] for protocol in REGISTRY
                 if (protocol, experiment.entry_id(run)) in by_key}
        if found:
            groups.setdefault(run.group, []).append((run, found))
    return groups


def scores_table(groups: Mapping[str, list]) -> list[str]:
    lines = ["| run | data | seeds | " + " | ".join(c[2] for c in COLUMNS) + " | steps × batch |",
             "|---|---|---:|" + "---:|" * len(COLUMNS) + "---|"]
    for group, runs in groups.items():
        cells = []
        for protocol, metric, _ in COLUMNS:
            values = [found[protocol]["metrics"][metric] for _, found in runs
                      if protocol in found and found[protocol]["metrics"].get(metric) is not None]
            cells.append(_spread(values) if values else "–")
        run = runs[0][0]
        budget = f"{run.budget['steps']:,} × {run.budget['batch_size']}" if run.budget else "none"
        lines.append(f"| {group} | {run.data} | {len(runs)} | " + " | ".join(cells) + f" | {budget} |")
    return lines


def latents_table(groups: Mapping[str, list]) -> list[str]:
    first = next(found["ident3d-eval-v1"] for runs in groups.values() for _, found in runs
                 if "ident3d-eval-v1" in found)
    factors = [row["factor"] for row in first["result"]["per_latent"]]
    lines = ["| run | " + " | ".join(factors) + " |", "|---|" + "---:|" * len(factors)]
    for group, runs in groups.items():
        results = [found["ident3d-eval-v1"]["result"] for _, found in runs if "ident3d-eval-v1" in found]
        cells = [f"{100 * statistics.fmean(max(0.0, r['per_latent'][k]['linear_r2']) for r in results):.1f}"
                 for k in range(len(factors))]
        lines.append(f"| {group} (n={len(results)}) | " + " | ".join(cells) + " |")
    return lines


def renders_lines(groups: Mapping[str, list]) -> list[str]:
    """Which render of each test split the entries were scored on (its manifest's sha256), with the
    seed groups whose entries were: renders made on different machines pass the track's verification
    but can differ in bytes, and a run trained there used that machine's training split too."""
    renders: dict[tuple[str, str], dict[str, set[str]]] = {}
    for group, runs in groups.items():
        for _, found in runs:
            for entry in found.values():
                key = (entry["dataset"], entry["result"]["dataset"].get("manifest_sha256") or "unrecorded")
                renders.setdefault(key, {}).setdefault(group, set()).add((entry["protocol"], entry["id"]))
    lines = ["", "The test-split render each entry was scored on (`result.dataset.manifest_sha256`; renders "
             "of a track made on different machines pass its verification but can differ in bytes, and a run "
             "trained on such a machine used its render of the training split as well):", ""]
    for (dataset, sha), by_group in sorted(renders.items(), key=lambda item: (item[0][0], -len(item[1]))):
        scored = ", ".join(f"{group} ({len(ids)} entr{'ies' if len(ids) > 1 else 'y'})"
                           for group, ids in by_group.items())
        lines.append(f"- `{dataset}` render `{sha[:12]}`: {scored}")
    return lines


def planned(groups: Mapping[str, list]) -> dict[str, list[Run]]:
    """The runs of the experiment file that have no entry yet, by seed group."""
    pending: dict[str, list[Run]] = {}
    done = {run.folder for runs in groups.values() for run, _ in runs}
    for run in load_experiment(EXPERIMENT).runs:
        if run.folder not in done:
            pending.setdefault(run.group, []).append(run)
    return pending


def planned_lines(pending: Mapping[str, list[Run]]) -> list[str]:
    if not pending:
        return []
    count = sum(len(runs) for runs in pending.values())
    return ["", f"Planned in `baselines/cpu_track.toml` and not run yet ({count} runs):", "",
            *(f"- `{group}` ({runs[0].preset} on `{runs[0].data}`, seed{'s' if len(runs) > 1 else ''} "
              f"{', '.join(str(r.seed) for r in runs)})" for group, runs in pending.items())]


def section(entries: list[Mapping[str, Any]]) -> str:
    groups = grouped(entries)
    return "\n".join([
        "Every seed group of `baselines/cpu_track.toml` with committed entries (public test split of 5,000 "
        "images; seed groups as mean ± sample sd, in percent). Each run is two entries of `3dident-v2-64@1` "
        "(or of `3dident-legacy-64@1` for the `legacy` data), one per protocol, with its checkpoint's "
        "sha256, the command that trains it and its training minutes in the footnote.", "",
        *scores_table(groups), "",
        "Linear R² of each latent (ident3d-eval-v1, percent, negatives shown as 0, mean over the group's "
        "seeds):", "",
        *latents_table(groups),
        *renders_lines(groups),
        *planned_lines(planned(groups))])

