"""Result files of the synthetic experiments -> one Markdown report: per paper row and column, the
paper's number beside the seeds' mean, sd and 95% t-interval at each budget, a verdict by the
project's interval rule (``ident3d.baselines.verdicts``) on the metric the row's table reports
(R² for Table 1, MCC for Table 2), the deviation rows paired seed by seed with their reference, the
learning curves, and AnInfoNCE's recovered Lambda.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ident3d import metrics
from ident3d.baselines.synthetic.budget import Budget
from ident3d.baselines.synthetic.figures import figure_name, has_trajectory, lambda_svg
from ident3d.baselines.synthetic.table import COLUMNS, Row, rows
from ident3d.baselines.verdicts import MIN_SEEDS, reproduction, t_interval, undecided
from ident3d.errors import TrainingError
from ident3d.readers import read_json

NUMBER = (int, float)
REQUIRED = {"row": str, "column": str, "title": str, "theory": str, "seed": int, "budget": dict,
            "cpu_seconds": NUMBER, "r2": NUMBER, "mcc": NUMBER, "curve": list}
NAMES = {"r2": "R²", "mcc": "MCC"}


def _numbers(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, NUMBER) for v in value)


def _problems(document: Any) -> list[str]:
    if not isinstance(document, dict):
        return ["not an object"]
    wrong = [key for key, kind in REQUIRED.items() if not isinstance(document.get(key), kind)]
    if not wrong:
        curve = document["curve"]
        try:
            Budget.parse(document["budget"], "result", complete=True)
        except TrainingError:
            wrong.append("budget")
        if document["row"] not in rows() or isinstance(document["seed"], bool) or document["seed"] < 0:
            wrong.append("row or seed")  # both name the result's figure file
        elif document["title"] != rows()[document["row"]].title:  # the row's setting changed since the run
            wrong.append(f"title (the run's {document['title']!r}; {document['row']} is now "
                         f"{rows()[document['row']].title!r}: file it under the row of its setting)")
        if not all(isinstance(c, dict) and all(isinstance(c.get(k), NUMBER) for k in ("step", "r2", "mcc"))
                   for c in curve):
            wrong.append("curve")
        traced = [c["precision"] for c in curve if isinstance(c, dict) and "precision" in c]
        truth, assignment = document.get("precision", {}).get("true", []), document.get("assignment", [])
        if traced and not (all(_numbers(p) and len(p) == len(traced[0]) > 0 for p in traced)
                           and _numbers(truth) and isinstance(assignment, list)
                           and all(isinstance(a, int) for a in assignment)):
            wrong.append("Lambda's trajectory")
        precision = document.get("precision", {})
        if "spearman" in precision and not (
                isinstance(precision["spearman"], NUMBER) and isinstance(precision.get("p_value"), NUMBER)
                and _numbers(precision.get("null_95")) and len(precision["null_95"]) == 2
                and _numbers(precision.get("learned_matched"))):
            wrong.append("precision")
        if document["column"] not in COLUMNS:
            wrong.append("column")
    return wrong


def load_results(folder: Path) -> list[dict[str, Any]]:
    """Every result file of ``folder``; a JSON file that is not one is refused by name."""
    results = []
    fix = "move it out of the results folder, or re-run `ident3d synthetic run` for its row and seed"
    for path in sorted(Path(folder).glob("*.json")):
        document = read_json(path, TrainingError, fix)
        wrong = _problems(document)
        if wrong:
            raise TrainingError(f"{path}: not a synthetic result of this table (missing, mistyped or "
                                f"not the row's: {', '.join(wrong)}). Fix: {fix}.")
        per_latent = document.get("r2_per_latent")
        if _numbers(per_latent) and per_latent and min(per_latent) < 0:  # written before R² was clipped
            document = {**document, "r2": 100 * metrics.clipped_mean(np.asarray(per_latent) / 100)}
        results.append(document)
    return results


def summary(values: list[float]) -> dict[str, float]:
    mean, low, high = t_interval(values)
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    return {"n": len(values), "mean": mean, "sd": sd, "low": low, "high": high}


def _cell(s: dict[str, float]) -> str:
    if s["n"] < 2:
        return f"{s['mean']:.2f} (1 seed)"
    return f"{s['mean']:.2f} ± {s['sd']:.2f} [{s['low']:.2f}, {s['high']:.2f}]"


def paper_cell(value: list[float] | None) -> str:
    if not value:
        return "—"
    return f"{value[0]:.2f}" + (f" ± {value[1]:.2f}" if len(value) > 1 else "")


Key = tuple[str, str, str]  # (run id, column, budget label)


def groups(results: list[dict[str, Any]]) -> dict[Key, list[dict[str, Any]]]:
    grouped: dict[Key, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        trained = r["column"] != "identity"  # the identity read-out trains nothing: no budget applies
        budget = Budget(**r["budget"]).label() if trained else "none (not trained)"
        grouped[(r["row"], r["column"], budget)].append(r)
    order = list(rows())
    return dict(sorted(grouped.items(), key=lambda kv: (
        order.index(kv[0][0]) if kv[0][0] in order else len(order), COLUMNS.index(kv[0][1]), kv[0][2])))


Runs = list[dict[str, Any]]


def row_groups(row: Row, grouped: dict[Key, Runs]) -> list[tuple[str, str, Runs]]:
    """(column, budget, runs) of every group measured for ``row`` (through the runs it shares)."""
    return [(column, budget, members) for (run_id, column, budget), members in grouped.items()
            if run_id == row.run_id]


def judged(row: Row) -> list[str]:
    """The metrics a row is judged on: those its source reports (for a deviation, its reference's)."""
    table = rows()
    source = table[row.reference] if row.reference else row
    return [m for m in NAMES if m in source.paper]


def collapsed(members: list[dict[str, Any]]) -> int:
    """Runs whose features ended constant: no correlation with any latent (MCC exactly 0) and no
    linear signal (R² <= 0), the end of a collapse such as the saturated sigmoid box's."""
    return sum(1 for m in members if m["mcc"] == 0 and m["r2"] <= 0)


def seeds_cell(members: list[dict[str, Any]]) -> str:
    lost = collapsed(members)
    return f"{len(members)}" + (f" ({lost} collapsed)" if lost else "")


def verdict_cell(row: Row, column: str, metric: str, members: list[dict[str, Any]]) -> str:
    """The verdict against the source's number. "Not reproduced" is said only of runs at the source's
    own budget; below it a value the runs miss is "not reached at <budget>" (the curves still rise),
    and where the source logged its curve at the runs' step, its value there is quoted beside."""
    target = row.paper_value(metric, column)
    if target is None:
        return "—"
    verdict = reproduction([m[metric] for m in members], target[0])
    if column == "identity" or not verdict.startswith("not reproduced"):
        return verdict
    budget = Budget(**members[0]["budget"])
    if budget == source_budget(row, column):
        return verdict
    verdict = verdict.replace("not reproduced", f"not reached at {budget.label()}", 1)
    logged = next((point for point in row.paper_curve if abs(point[0] - budget.steps) <= 1), None)
    if logged is not None:
        value = logged[1] if metric == "r2" else logged[2]
        verdict += f"; the source's own log at step {logged[0]:,}: {value:.2f}"
    return verdict


def source_budget(row: Row, column: str) -> Budget | None:
    """The budget the source's number was reached at, where this package runs it (main_mlp.py's for
    the paper's rows); None for sources it does not run at their own budget."""
    if not row.paper_source.startswith("Zimmermann"):
        return None
    return PAPER_SUPERVISED_BUDGET if column == "supervised" else PAPER_BUDGET


def table(results: list[dict[str, Any]]) -> list[str]:
    """One line per row, column and budget: the judged metric (paper, measured, verdict) and the other
    metric measured beside it."""
    grouped = groups(results)
    lines = ["| row | column | setting | theory | budget (batch x steps, lr) | seeds | judged on | paper | "
             "measured (mean ± sd [95% CI]) | verdict | other metric, measured | CPU min/run |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows().values():
        metrics = judged(row) or ["r2"]
        for column, budget, members in row_groups(row, grouped):
            cpu = np.mean([m["cpu_seconds"] for m in members]) / 60
            for metric in metrics:
                other = next(m for m in NAMES if m != metric)
                measured = summary([m[metric] for m in members])
                shown = (f"{NAMES[other]} {_cell(summary([m[other] for m in members]))}"
                         if len(metrics) == 1 else "—")
                lines.append(f"| {row.id} | {column} | {row.title} | {row.theory} | {budget} | "
                             f"{seeds_cell(members)} | {NAMES[metric]} | "
                             f"{paper_cell(row.paper_value(metric, column))} | {_cell(measured)} | "
                             f"{verdict_cell(row, column, metric, members)} | {shown} | {cpu:.1f} |")
    return lines


def paired(a: list[dict[str, Any]], b: list[dict[str, Any]], metric: str) -> str:
    """a - b over the seeds both arms ran (same seed: same mixing, data and init), with the 95% t
    interval of the paired differences."""
    by_seed = {m["seed"]: m[metric] for m in b}
    diffs = [m[metric] - by_seed[m["seed"]] for m in a if m["seed"] in by_seed]
    if not diffs:
        return "no seed in common"
    mean, low, high = t_interval(diffs)
    if len(diffs) < MIN_SEEDS:
        return f"{mean:+.2f}; {undecided(len(diffs))}"
    word = "differs" if low > 0 or high < 0 else "no difference shown"
    return f"{mean:+.2f} [{low:+.2f}, {high:+.2f}]; {word}"


def beside(results: list[dict[str, Any]]) -> list[str]:
    """Each deviation row against the row it changes one thing of, at the same budget, seed by seed."""
    known, grouped = rows(), groups(results)
    lines = ["| row | against | budget | seeds paired | R² row / against | MCC row / against | "
             "difference R² | difference MCC |", "|---|---|---|---|---|---|---|---|"]
    for (run_id, column, budget), members in grouped.items():
        row = known.get(run_id)
        if row is None or not row.reference:
            continue
        others = grouped.get((known[row.reference].run_id, column, budget))
        if not others:
            continue
        common = len({m["seed"] for m in members} & {m["seed"] for m in others})
        means = [f"{np.mean([m[k] for m in members]):.2f} / {np.mean([m[k] for m in others]):.2f}"
                 for k in NAMES]
        lines.append(f"| {run_id} | {row.reference} | {budget} | {common} | {' | '.join(means)} | "
                     + " | ".join(paired(members, others, k) for k in NAMES) + " |")
    return lines


def curves(results: list[dict[str, Any]], points: int = 8) -> list[str]:
    lines = ["| row | column | budget | step: mean R² / MCC over seeds |", "|---|---|---|---|"]
    for (row_id, column, budget), members in groups(results).items():
        if not members[0]["curve"]:
            continue
        steps = sorted({c["step"] for c in members[0]["curve"]})
        pick = [steps[i] for i in np.unique(np.linspace(0, len(steps) - 1, points).round().astype(int))]
        cells = []
        for step in pick:
            values = [c for m in members for c in m["curve"] if c["step"] == step]
            cells.append(f"{step:,}: {np.mean([c['r2'] for c in values]):.1f} / "
                         f"{np.mean([c['mcc'] for c in values]):.1f}")
        lines.append(f"| {row_id} | {column} | {budget} | {'; '.join(cells)} |")
    return lines


def against_the_log(results: list[dict[str, Any]]) -> list[str]:
    """Our seeds' mean at the steps where the paper's own log has a point (within 250 steps, the
    log's spacing), beside that point."""
    table = rows()
    lines = ["| row | budget | step (ours / the log's) | R² ours / log | MCC ours / log |",
             "|---|---|---|---|---|"]
    for (row_id, _, budget), members in groups(results).items():
        for step, r2, mcc in getattr(table.get(row_id), "paper_curve", ()):
            ours = [c for m in members for c in m["curve"] if abs(c["step"] - step) <= 250]
            if len(ours) == len(members):
                lines.append(f"| {row_id} | {budget} | {ours[0]['step']:,} / {step:,} | "
                             f"{np.mean([c['r2'] for c in ours]):.2f} / {r2:.2f} | "
                             f"{np.mean([c['mcc'] for c in ours]):.2f} / {mcc:.2f} |")
    return lines


def precisions(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| row | budget | seed | Spearman(true, learned Lambda of the matched feature) | null 95% | "
             "p | learned Lambda, matched to latents 1..10 |", "|---|---|---|---|---|---|---|"]
    for (row_id, _, budget), members in groups(results).items():
        for m in members:
            p = m.get("precision")
            if not p or "spearman" not in p:
                continue
            lines.append(f"| {row_id} | {budget} | {m['seed']} | {p['spearman']:.3f} | "
                         f"[{p['null_95'][0]:.2f}, {p['null_95'][1]:.2f}] | {p['p_value']:.4f} | "
                         f"{', '.join(f'{v:.1f}' for v in p['learned_matched'])} |")
    return lines


def _short_lines(results: list[dict[str, Any]], chosen: dict[str, list[tuple[str, str]]]) -> list[str]:
    """| row | column | setting | budget | seeds | judged on | paper | here | verdict | for the chosen
    (column, budget) groups of each row."""
    grouped = groups(results)
    lines = ["| row | column | setting | budget | seeds | judged on | paper | here | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row_id, picks in chosen.items():
        row = rows()[row_id]
        for column, budget in picks:
            members = grouped[(row.run_id, column, budget)]
            for metric in judged(row) or ["r2", "mcc"]:
                s = summary([m[metric] for m in members])
                here = f"{s['mean']:.2f}" + (f" ± {s['sd']:.2f}" if s["n"] > 1 else "")
                lines.append(f"| {row.id} | {column} | {row.title} | {budget} | {seeds_cell(members)} | "
                             f"{NAMES[metric]} | {paper_cell(row.paper_value(metric, column))} | {here} | "
                             f"{verdict_cell(row, column, metric, members)} |")
    return lines


def summary_block(folder: Path) -> str:
    """The short table of docs/synthetic.md: every row, column and budget measured."""
    results = load_results(folder)
    grouped = groups(results)
    chosen = {row.id: [(c, b) for c, b, _ in row_groups(row, grouped)] for row in rows().values()}
    return "\n".join(_short_lines(results, {k: v for k, v in chosen.items() if v}))

PAPER_BUDGET = Budget(steps=300_003, batch_size=6_144, lr=1e-4)  # main_mlp.py, unsupervised
PAPER_SUPERVISED_BUDGET = Budget(steps=100_001, batch_size=6_144, lr=1e-4)  # main_mlp.py, supervised
TABLE_BUDGET = "table"  # the plan's sweep whose budget the README states


def supervised_twins() -> list[tuple[str, ...]]:
    """Rows of the paper's Supervised column whose supervised runs are one and the same, seed by seed:
    the encoder is fitted to z by MSE, so it sees the latents' space and marginal, the mixing (seeded
    by the seed) and the model's output space, never the positives or the loss."""
    by_setting: dict[tuple, list[str]] = defaultdict(list)
    for row in rows().values():
        if not row.same_run_as and any(row.paper_value(m, "supervised") for m in NAMES):
            p = row.process
            by_setting[(p.space, p.marginal, p.marginal_scale, p.dim, row.model.space)].append(row.id)
    return [tuple(ids) for ids in by_setting.values() if len(ids) > 1]


def readme_block(folder: Path) -> str:
    """README's few lines: how the paper's rows fare at the table's budget, column by column (each row
    at its budget with the most seeds), how far that budget is from the paper's, and AnInfoNCE
    against its isotropic control, seed by seed."""
    from ident3d.baselines.synthetic.sweep import load_plan

    results = load_results(folder)
    grouped = groups(results)
    table_budget = next(s.budget for s in load_plan() if s.name == TABLE_BUDGET)
    ratio = {name: (paper.steps * paper.batch_size) / (table_budget.steps * table_budget.batch_size)
             for name, paper in (("unsupervised", PAPER_BUDGET), ("supervised", PAPER_SUPERVISED_BUDGET))}
    lines = ["| the paper's column | rows with 3 seeds | reproduced | not reproduced | not reached at this "
             "budget | not decidable |", "|---|---|---|---|---|---|"]
    paper_rows = [row for row in rows().values() if row.paper_source.startswith("Zimmermann")]
    shared_runs = []
    for column in COLUMNS:
        verdicts, counted = [], []
        for row in paper_rows:
            metric = judged(row)[0]
            if row.paper_value(metric, column) is None:
                continue
            found = [members for c, _, members in row_groups(row, grouped) if c == column
                     and (column == "identity" or Budget(**members[0]["budget"]) == table_budget)]
            if found and len(found[0]) >= MIN_SEEDS:
                verdicts.append(verdict_cell(row, column, metric, found[0]))
                counted.append(row)
        if verdicts:
            counts = [sum(v.startswith(word) for v in verdicts)
                      for word in ("reproduced", "not reproduced", "not reached", "not decidable")]
            lines.append(f"| {column} | {len(verdicts)} | " + " | ".join(map(str, counts)) + " |")
            reusing = [row for row in counted if row.same_run_as]
            if reusing:
                shared_runs.append(
                    f"the {column} column's {len(counted)} rows come from {len(counted) - len(reusing)} "
                    "run sets "
                    f"({', '.join(r.id for r in reusing)} reuse the runs of "
                    f"{', '.join(r.same_run_as for r in reusing)}: the paper prints those settings in both "
                    "tables, judged on R² in one and on MCC in the other)")
    lines += ["", f"Trained columns at {table_budget.label()} per run: {ratio['unsupervised']:,.0f} times "
              f"fewer pairs than the paper's {PAPER_BUDGET.label()} (unsupervised), "
              f"{ratio['supervised']:,.0f} times fewer than its {PAPER_SUPERVISED_BUDGET.label()} "
              "(supervised); each row at every budget: docs/synthetic.md."]
    if shared_runs:
        lines[-1] += " Counting: " + "; ".join(shared_runs) + "."
    for twins in supervised_twins():
        lines[-1] += (f" {' and '.join(twins)} share their supervised runs seed by seed (the supervised "
                      "encoder sees the marginal, the mixing and the output space, not the positives or "
                      "the loss), so their supervised verdicts are one experiment's, on two metrics.")
    lines += aninfonce_lines(grouped)
    return "\n".join(lines)


ANINFONCE_CLAIM = ("AnInfoNCE's claim (Rusak et al., AISTATS 2025, synthetic experiments): when the "
                   "positives vary by a different amount along each latent, AnInfoNCE recovers the latents "
                   "up to a permutation (MCC about 99), where isotropic InfoNCE recovers them only up to a "
                   "rotation; "
                   "latents that share one amount are recovered only as a block (MCC about 68 at R² 99.7). "
                   "Both losses read the latents linearly (high R²), so the claim is about MCC.")


def aninfonce_lines(grouped: dict[Key, Runs]) -> list[str]:
    """The claim in the source's terms, then per AnInfoNCE row: against its isotropic control (same
    seeds, the budget with the most seeds), against the authors' own number, and at the authors' batch
    where it was run, beside the authors' log at the same step."""
    table, lines = rows(), []
    for (a, b), precisions in ANINFONCE_PAIRS.items():
        arms = [(grouped[(a, "unsupervised", budget)], grouped.get((b, "unsupervised", budget)))
                for (run_id, column, budget) in grouped if (run_id, column) == (a, "unsupervised")]
        mine, control = max(arms, key=lambda pair: len(pair[0]), default=(None, None))
        if not (mine and control and len(mine) >= MIN_SEEDS and len(control) >= MIN_SEEDS):
            continue
        spearman = [m["precision"]["spearman"] for m in mine if "spearman" in m.get("precision", {})]
        budget = Budget(**mine[0]["budget"]).label()
        r2 = {arm: summary([m["r2"] for m in runs])["mean"] for arm, runs in ((a, mine), (b, control))}
        text = (f"{a} (AnInfoNCE) against {b} (isotropic InfoNCE), {precisions}, at {budget}, same seeds: "
                f"MCC {a} minus {b} {paired(mine, control, 'mcc')}; R² {a} {r2[a]:.2f} and {b} {r2[b]:.2f} "
                f"({a} minus {b} {paired(mine, control, 'r2')})")
        target = table[a].paper_value("mcc", "unsupervised")
        if target is not None:
            text += (f"; {a}'s own MCC {_cell(summary([m['mcc'] for m in mine]))} against the authors' "
                     f"{target[0]:.2f}: {verdict_cell(table[a], 'unsupervised', 'mcc', mine)}")
        lines += ["", text + _rank_agreement(mine, spearman) + _at_source_budget(table[a], b, grouped)]
    return ["", ANINFONCE_CLAIM, *lines] if lines else []


def _at_source_budget(row: Row, control: str, grouped: dict[Key, Runs]) -> str:
    """Where the row was also run at the authors' batch and learning rate: its curve at the step the
    authors logged, beside their log, and its control's MCC there."""
    for (run_id, column, budget), runs in grouped.items():
        used = Budget(**runs[0]["budget"])
        if (run_id, column) != (row.id, "unsupervised") or (used.batch_size, used.lr) != ANINFONCE_SOURCE:
            continue
        for step, r2, mcc in row.paper_curve:
            point = next((c for c in runs[0]["curve"] if abs(c["step"] - step) <= 1), None)
            if point is None:
                continue
            twin = next((c for r in grouped.get((control, "unsupervised", budget), [])[:1] for c in r["curve"]
                         if c["step"] == point["step"]), None)
            seeds = "one seed" if len(runs) == 1 else f"{len(runs)} seeds, the first"
            return (f" At the authors' batch and learning rate ({budget}, {seeds}), {row.id} at step "
                    f"{point['step']:,} reads R² {point['r2']:.2f}, MCC {point['mcc']:.2f}; the authors' log "
                    f"at step {step:,}: R² {r2:.2f}, MCC {mcc:.2f}"
                    + (f"; {control} there: MCC {twin['mcc']:.2f}." if twin else "."))
    return ""


def _rank_agreement(runs: list[dict[str, Any]], spearman: list[float]) -> str:
    """How the learned Lambda ranks the true precisions over the seeds, beside the most any ranking
    reaches when the true precisions tie (a strict ranking cannot match tied ranks exactly)."""
    if not spearman:
        return "."
    low, high = min(spearman), max(spearman)
    text = f"; the learned Lambda ranks the true precisions with Spearman {low:.3f}" + (
        f"-{high:.3f}" if f"{high:.3f}" != f"{low:.3f}" else "")
    ceiling = metrics.spearman_ceiling(np.asarray(runs[0]["precision"]["true"]))
    tied = f" (with their ties the most any ranking reaches is {ceiling:.3f})" if ceiling < 1 - 1e-9 else ""
    return f"{text}{tied}."


# AnInfoNCE and its isotropic control on the same positives, for the README: (AnInfoNCE, control) -> the
# positives' precisions
# The batch and learning rate of the AnInfoNCE authors' logged runs (their training_logs; rows.toml's
# paper_source of A.1 and A.3)
ANINFONCE_SOURCE = (1000, 1e-4)
ANINFONCE_PAIRS = {("A.1", "A.2"): "precisions 5 ... 25 linearly spaced",
                   ("A.3", "A.4"): "two blocks of equal precisions (25 and 5)"}


FIGURES = "synthetic-figures"  # folder of the figures, beside the report


def figures(folder: Path) -> dict[str, str]:
    """The report's figures: file name (inside FIGURES) -> SVG text."""
    return {figure_name(r): lambda_svg(r) for r in load_results(folder) if has_trajectory(r)}


def report(folder: Path, shown_as: str | None = None) -> str:
    """The full report of the results in ``folder`` (named ``shown_as`` in its text, default as given)."""
    results = load_results(folder)
    measured = {r["row"] for r in results}
    sources = [(row.id, row.paper_source) for row in rows().values()
               if row.paper_source and row.run_id in measured]
    parts = ["<!-- generated by `ident3d synthetic report`; do not edit by hand -->", "",
             f"{len(results)} runs from `{shown_as or folder}`.", "", *table(results), "",
             "Learning curves (held-out R² / MCC in percent at logged steps):", "", *curves(results)]
    beside_lines = beside(results)
    if len(beside_lines) > 2:
        parts += ["", "Deviation rows beside the row they change one thing of (same budget, seed by seed: "
                  "the mean of the paired differences with its 95% t interval; a verdict needs "
                  f"{MIN_SEEDS} pairs):",
                  "", *beside_lines]
    log_lines = against_the_log(results)
    if len(log_lines) > 2:
        parts += ["", "Against the paper's own training log at the same step (the log's run is described "
                  "under Paper numbers):", "", *log_lines]
    lambda_lines = precisions(results)
    if len(lambda_lines) > 2:
        parts += ["", "AnInfoNCE: is Lambda recovered? (null: the same learned values under random "
                  "matchings, 10,000 permutations)", "", *lambda_lines]
    drawn = [r for r in results if has_trajectory(r)]
    if drawn:
        parts += ["", "Lambda's trajectory (written beside the report by `--out`):", "",
                  *(f"![{r['row']} seed {r['seed']}, {label}]({FIGURES}/{figure_name(r)})"
                    for r in drawn for label in [Budget(**r["budget"]).label()])]
    if sources:
        parts += ["", "Paper numbers: " + "; ".join(f"{row}: {source}" for row, source in sources) + "."]
    return "\n".join(parts) + "\n"

