"""The companion protocols' numbers of a leaderboard row (DCI, read-out extrapolation, the rendered
OOD splits, and block identifiability on a content/style split): read from the entry's result, a seed
group's as its runs' mean. Entries gain them only from a result that has them, that is by re-scoring
their model file. A table shows a column only when one of its rows has a value in it; the page gets the
same columns from its data (``leaderboard.site``). Their labels and order are ``METRICS``'; where
each lives in a result is said here only."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from ident3d.leaderboard.ranking import shown_result
from ident3d.protocols import METRICS, OOD_REGIONS, Metric

BLOCKS = ("content", "style")
BLOCK_FITS = ("linear", "kernel")


def metric_columns() -> list[Metric]:
    """The per-latent metrics every table shows as columns (their means), in ``METRICS`` order."""
    return [m for m in METRICS.values() if m.per_latent and m.column]


def columns() -> list[Metric]:
    """The companion columns (every metric of ``METRICS`` that is not per-latent), in its order: the
    order of the columns in LEADERBOARD.md and on the page."""
    return [m for m in METRICS.values() if not m.per_latent]


def companion_metrics(row: Mapping[str, Any]) -> dict[str, float | None]:
    """Every column's value for ``row`` (None where its result has none)."""
    if "runs" in row:
        per_run = [companion_metrics(run) for run in row["runs"]]
        values = {m.name: [r.get(m.name) for r in per_run] for m in columns()}
        return {key: None if None in v else statistics.fmean(v) for key, v in values.items()}
    result = shown_result(row)  # a verified row's fresh draw
    dci, extrapolation = result.get("dci") or {}, result.get("extrapolation") or {}
    ood = {split["split"]: split["linear_r2"] for split in (result.get("ood") or {}).get("splits", [])}
    blocks = result.get("blocks") or {}
    return {"dci_disentanglement": dci.get("disentanglement"), "dci_completeness": dci.get("completeness"),
            "dci_informativeness": dci.get("informativeness"),
            "extrapolation_linear_r2": extrapolation.get("linear_r2"),
            **{f"ood_{region}_linear_r2": ood.get(f"test-{region}") for region in OOD_REGIONS},
            **{f"{block}_{fit}_r2": blocks.get(f"{block}_{fit}_r2")
               for block in BLOCKS for fit in BLOCK_FITS}}


def shown_columns(rows: list[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The columns (key, label) in which some row of a table, or one of its runs, has a value."""
    values = [companion_metrics(r) for row in rows for r in (row, *row.get("runs", []))]
    return [(m.name, m.label) for m in columns() if any(v.get(m.name) is not None for v in values)]
