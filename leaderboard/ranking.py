"""Ranking: rows are compared only within one (dataset, protocol) table, by MCC, then R^2, then ID."""

from __future__ import annotations

from typing import Any

Entry = dict[str, Any]
Table = tuple[str, str]  # (dataset, protocol)


def rank_key(entry: Entry) -> tuple[float, float, str]:
    """Higher MCC first, then higher linear R^2; a missing MCC ranks below every number."""
    m = entry["metrics"]
    mcc = m.get("mcc_pearson")
    return (-(mcc if mcc is not None else -1.0), -m["linear_r2"], entry["id"])


def table_of(entry: Entry) -> Table:
    return entry["dataset"], entry["protocol"]


def ranked_tables(entries: list[Entry]) -> dict[Table, list[Entry]]:
    """Tables with the most entries first (then by dataset and protocol), each ranked best first;
    the page opens on the first."""
    tables: dict[Table, list[Entry]] = {}
    for entry in entries:
        tables.setdefault(table_of(entry), []).append(entry)
    order = sorted(tables, key=lambda key: (-len(tables[key]), key))
    return {key: sorted(tables[key], key=rank_key) for key in order}


def placement(entries: list[Entry], candidate: Entry) -> tuple[int, int, list[Entry]]:
    """Where ``candidate`` would rank in its table: (rank, table size with it, the table)."""
    table = sorted([e for e in entries if table_of(e) == table_of(candidate)] + [candidate],
                   key=rank_key)
    return table.index(candidate) + 1, len(table), table
