"""What each leaderboard column means, in one sentence: the legend under LEADERBOARD.md's header and the
tooltips and legend of the page's table (``leaderboard.site``). Keys are the columns' data keys; a
metric's sentence is its entry in ``ident3d.protocols.METRICS``."""

from __future__ import annotations

from ident3d.protocols import METRICS

ROW_FIELDS = {
    "rank": "rank within this track and protocol: by MCC, then linear R², then ID",
    "name": "the model (linked to its paper), its entry ID and notes",
    "positives": "how positive pairs were made",
    "loss": "the training loss",
    "model_space": "the space the encoder's features live in",
    "status": "how the numbers were obtained (the status legend above)",
}


def meanings() -> dict[str, str]:
    """Every column's sentence by data key: the row's fields and every metric."""
    return {**ROW_FIELDS, **{name: metric.legend for name, metric in METRICS.items()}}


def markdown_legend(keys: list[str]) -> str:
    """The legend of a Markdown table's columns (``keys``: their data keys), one line."""
    known = meanings()
    return "Columns: " + "; ".join(known[key] for key in keys) + "."
