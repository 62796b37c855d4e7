"""The rows of the synthetic experiments, read from ``rows.toml`` and checked."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

import numpy as np

from ident3d.baselines.losses import LOSSES, NEGATIVES
from ident3d.baselines.models import OUTPUT_SPACES
from ident3d.baselines.synthetic.processes import Process
from ident3d.errors import TrainingError, did_you_mean

THEORIES = ("identifiable", "mismatch")
# What a row's runs train: the contrastive encoder (the paper's "Unsupervised" column), nothing (the
# "Identity" read-out of g itself) or the same encoder fitted to z by MSE ("Supervised").
COLUMNS = ("unsupervised", "identity", "supervised")
METRICS = ("r2", "mcc")


@dataclass(frozen=True)
class Model:
    space: str = "unbounded"
    loss: str = "lp"
    p: float = 2.0
    tau: float = 1.0
    negatives: str = "anchors"

    def __post_init__(self) -> None:
        for name, allowed in (("space", tuple(OUTPUT_SPACES)), ("loss", LOSSES),
                              ("negatives", NEGATIVES)):
            if getattr(self, name) not in allowed:
                raise TrainingError(f"model {name} = {getattr(self, name)!r}; expected one of "
                                    f"{', '.join(allowed)}")


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    theory: str
    process: Process
    model: Model
    # metric -> column -> [mean] or [mean, sd], as the source prints them (percent)
    paper: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    paper_source: str = ""
    paper_curve: tuple[tuple[int, float, float], ...] = ()  # (step, R², MCC) from the paper's own log
    reference: str = ""  # a deviation row: the row it changes one thing of (compared seed by seed)
    same_run_as: str = ""  # the row whose runs this one shares (the paper prints the setting twice)

    @property
    def run_id(self) -> str:
        """The id its result files carry."""
        return self.same_run_as or self.id

    def paper_value(self, metric: str, column: str = "unsupervised") -> list[float] | None:
        return self.paper.get(metric, {}).get(column)


def precisions(text: str, dim: int) -> tuple[float, ...]:
    """``linear LOW HIGH`` (evenly spaced) or ``bimodal FIRST SECOND`` (first half, second half)."""
    kind, *values = text.split()
    if kind not in ("linear", "bimodal") or len(values) != 2:
        raise TrainingError(f"precisions = {text!r}; expected 'linear LOW HIGH' or 'bimodal FIRST SECOND'")
    a, b = map(float, values)
    if kind == "linear":
        return tuple(np.linspace(a, b, dim).tolist())
    return (a,) * (dim // 2) + (b,) * (dim - dim // 2)


def _row(entry: dict[str, Any]) -> Row:
    process = dict(entry["process"])
    if isinstance(process.get("precisions"), str):
        process["precisions"] = precisions(process["precisions"], process.get("dim", 10))
    if entry["theory"] not in THEORIES:
        raise TrainingError(f"row {entry['id']}: theory = {entry['theory']!r}; expected one of "
                            f"{', '.join(THEORIES)}")
    paper = entry.get("paper", {})
    if not all(metric in METRICS and set(values) <= set(COLUMNS) for metric, values in paper.items()):
        raise TrainingError(f"row {entry['id']}: paper = {paper!r}; expected {{ metric = {{ column = "
                            f"[mean, sd] }} }} with metrics {', '.join(METRICS)} and columns "
                            f"{', '.join(COLUMNS)}")
    return Row(id=entry["id"], title=entry["title"], theory=entry["theory"], process=Process(**process),
               model=Model(**entry["model"]), paper=paper,
               paper_source=entry.get("paper_source", ""),
               paper_curve=tuple(tuple(point) for point in entry.get("paper_curve", ())),
               reference=entry.get("reference", ""), same_run_as=entry.get("same_run_as", ""))


def rows() -> dict[str, Row]:
    """Every row of ``rows.toml`` by id (a new dict each call; the file is parsed once per content)."""
    return dict(_parse_rows(files("ident3d.baselines.synthetic").joinpath("rows.toml").read_text()))


@functools.lru_cache(maxsize=2)
def _parse_rows(text: str) -> dict[str, Row]:
    table = {entry["id"]: _row(entry) for entry in tomllib.loads(text)["row"]}
    for row in table.values():
        for name in ("reference", "same_run_as"):
            other = getattr(row, name)
            if other and other not in table:
                raise TrainingError(f"row {row.id}: {name} = {other!r} is no row of rows.toml")
        shared = table.get(row.same_run_as)
        if shared and (shared.process, shared.model) != (row.process, row.model):
            raise TrainingError(f"row {row.id}: same_run_as = {row.same_run_as!r}, but its setting differs")
    return table


def get_row(row_id: str) -> Row:
    table = rows()
    if row_id not in table:
        raise TrainingError(f"unknown synthetic row {row_id!r}; expected one of {', '.join(table)}."
                            f"{did_you_mean(row_id, list(table))} Fix: pick a row of "
                            "baselines/synthetic/rows.toml (ident3d synthetic rows).")
    return table[row_id]
