"""The companion protocols' numbers of a leaderboard row (DCI and read-out extrapolation, computed with
``ident3d-eval-v1``): read from the entry's result, a seed group's as its runs' mean. Entries gain
them only from a result that has them, that is by re-scoring their model file."""

from __future__ import annotations

import statistics
from typing import Any

COLUMNS = (("dci_disentanglement", "D (%)"), ("dci_completeness", "C (%)"), ("dci_informativeness", "I (%)"),
           ("extrapolation_linear_r2", "extrapolation R² (%)"))


def companion_metrics(row: dict[str, Any]) -> dict[str, float | None]:
    if "runs" in row:
        per_run = [companion_metrics(run) for run in row["runs"]]
        values = {key: [r[key] for r in per_run] for key, _ in COLUMNS}
        return {key: None if None in v else statistics.fmean(v) for key, v in values.items()}
    result = row.get("result") if isinstance(row.get("result"), dict) else {}
    dci, extrapolation = result.get("dci") or {}, result.get("extrapolation") or {}
    return {"dci_disentanglement": dci.get("disentanglement"), "dci_completeness": dci.get("completeness"),
            "dci_informativeness": dci.get("informativeness"),
            "extrapolation_linear_r2": extrapolation.get("linear_r2")}


def any_companions(rows: list[dict[str, Any]]) -> bool:
    return any(v is not None for row in rows for v in companion_metrics(row).values())
