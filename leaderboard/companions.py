"""The companion protocols' numbers of a leaderboard row (DCI, read-out extrapolation, the rendered
OOD splits, and block identifiability on a content/style split): read from the entry's result, a seed
group's as its runs' mean. Entries gain them only from a result that has them, that is by re-scoring
their model file. A table shows a column only when one of its rows has a value in it; the page gets the
same columns from its data (``leaderboard.site``), so the list lives here only."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from ident3d.leaderboard.ranking import shown_result

OOD_SPLITS = ("interpolation", "extrapolation", "composition")  # test-<name> splits of an OOD track
BLOCK_READ_OUTS = (("content", True), ("style", False))  # a content encoder should read content, not style
BLOCK_FITS = ("linear", "kernel")
# (key, label, higher is better): the order of the columns in LEADERBOARD.md and on the page
COLUMNS = (("dci_disentanglement", "D", True), ("dci_completeness", "C", True),
           ("dci_informativeness", "I", True), ("extrapolation_linear_r2", "extrapolation R²", True),
           *((f"ood_{name}_linear_r2", f"OOD {name} R²", True) for name in OOD_SPLITS),
           *((f"{block}_{fit}_r2", f"{block} R² ({fit})", higher)
             for block, higher in BLOCK_READ_OUTS for fit in BLOCK_FITS))


def companion_metrics(row: Mapping[str, Any]) -> dict[str, float | None]:
    """Every column's value for ``row`` (None where its result has none)."""
    if "runs" in row:
        per_run = [companion_metrics(run) for run in row["runs"]]
        values = {key: [r[key] for r in per_run] for key, *_ in COLUMNS}
        return {key: None if None in v else statistics.fmean(v) for key, v in values.items()}
    result = shown_result(row)  # a verified row's fresh draw
    dci, extrapolation = result.get("dci") or {}, result.get("extrapolation") or {}
    ood = {split["split"]: split["linear_r2"] for split in (result.get("ood") or {}).get("splits", [])}
    blocks = result.get("blocks") or {}
    return {"dci_disentanglement": dci.get("disentanglement"), "dci_completeness": dci.get("completeness"),
            "dci_informativeness": dci.get("informativeness"),
            "extrapolation_linear_r2": extrapolation.get("linear_r2"),
            **{f"ood_{name}_linear_r2": ood.get(f"test-{name}") for name in OOD_SPLITS},
            **{f"{block}_{fit}_r2": blocks.get(f"{block}_{fit}_r2")
               for block, _ in BLOCK_READ_OUTS for fit in BLOCK_FITS}}


def shown_columns(rows: list[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The columns (key, label) in which some row of a table, or one of its runs, has a value."""
    values = [companion_metrics(r) for row in rows for r in (row, *row.get("runs", []))]
    return [(key, label) for key, label, _ in COLUMNS if any(v[key] is not None for v in values)]
