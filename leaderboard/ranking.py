"""Ranking: rows are compared only within one (dataset, protocol) table, by MCC, then R^2, then ID.

Ranks mean verified: a table's verified rows (signed by a keyring key, scored on a fresh draw) come
first, ranked 1, 2, ... by their fresh scores; every other row (public-split, self-reported,
reported-in-paper, unverified claim) is listed after them in its own order, numbered (1), (2), ...,
which is not comparable with a verified rank: no unverified row ever ranks above a verified one.

Entries that share a ``seed_group`` in one table are runs of one method with different seeds: they
form one row holding their mean and sample standard deviation (``runs``: the entries, best first),
so one method cannot fill several ranks.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ident3d.errors import ResultError
from ident3d.leaderboard.entries import Entry
from ident3d.protocols import METRICS, per_latent_metrics, ranking_metrics

Row = Mapping[str, Any]  # an entry (``leaderboard.entries.Row``) or a seed group's row
Table = tuple[str, str]  # (dataset, protocol)
GROUP_AGREES_ON = ("loss", "positives", "model_space", "training_data", "status", "paper", "code")


UNVERIFIED_CLAIM = "unverified-claim"
UNSIGNED = "–"  # a field a verified row's record does not sign, in its place

# The reference rows every table is read against, named by the fields the package writes for them
# (baselines/baseline_entries.py): the topline is trained on the latents themselves, the floor learns
# nothing. A row is marked so, never ranked apart: the mark says what its score means.
SUPERVISED_POSITIVES = "none (supervised)"
PIXELS_LOSS = "none (linear read-out from pixels)"
REFERENCES = {"topline": "trained on the latents: the score a method without labels is read against",
              "floor": "no learning: the score of the images themselves"}


def reference(row: Row) -> str | None:
    """"topline" for a row trained on the latents, "floor" for the pixel read-out, else None."""
    if row.get("positives") == SUPERVISED_POSITIVES:
        return "topline"
    return "floor" if row.get("loss") == PIXELS_LOSS else None


def signer(row: Row) -> str | None:
    """The keyring key that signed a verified entry's record (``leaderboard.verification``), or None:
    a status field alone proves nothing."""
    proof = getattr(row, "proof", None)
    return proof.signer if row.get("status") == "verified" and proof is not None else None


def status(row: Row) -> str:
    """The status a row is shown with: "verified" only when signed by a keyring key; an entry that
    says it without a valid signature is an unverified claim (ranked by its public-split numbers)."""
    if "runs" in row or row.get("status") != "verified":
        return row["status"]
    return "verified" if signer(row) else UNVERIFIED_CLAIM


def claim_problem(row: Row) -> str | None:
    """Why a row's verified claim fails, or None."""
    proof = getattr(row, "proof", None)
    if status(row) != UNVERIFIED_CLAIM:
        return None
    return proof.problem if proof is not None else "its signature was never checked against a keyring"


def is_verified(row: Row) -> bool:
    return status(row) == "verified"


@dataclass(frozen=True)
class SignedView(Entry):
    """What a board shows of a row verified under record format 1: only what that record signs (the
    id, the scores and the model's name the result carries, the draw, the signer); its description
    (positives, loss, space, authors, paper, code, footnote) and its seed group, archive note and
    metrics_std were never signed, so they are not shown (``verification.SIGNED_BY_V1``). Made from
    an entry validated whole, so it is not validated again."""

    def __post_init__(self, source: str, around: Any) -> None:
        pass


def shown_entry(entry: Row) -> Row:
    """The entry as a board shows it: a format-1 verified row masked to what its record signs, any
    other row as it is."""
    from ident3d.leaderboard.verification import SIGNED_BY_V1

    proof = getattr(entry, "proof", None)
    if not signer(entry) or proof.signs_every_field:
        return entry
    kept = {k: v for k, v in entry.items() if k in SIGNED_BY_V1}
    described = ("training_data", "positives", "loss", "model_space")
    kept.update(name=entry["result"]["model"]["name"], authors=[UNSIGNED], paper=None, code=None,
                footnote=None, **dict.fromkeys(described, UNSIGNED))
    return SignedView(kept, proof=proof)


def fresh_draw(row: Row) -> Mapping[str, Any] | None:
    """A proven verified entry's fresh draw (``result.fresh``); None for any other row."""
    return (row.get("result") or {}).get("fresh") if signer(row) else None


def shown_result(row: Row) -> Mapping[str, Any]:
    """The scores a row shows beyond its metrics (per latent, DCI, extrapolation, OOD, blocks): a
    proven verified entry's fresh draw, whose public-split numbers appear only as the gap; any other
    row's result ({} when it has none)."""
    if signer(row):
        return fresh_draw(row) or {}
    result = row.get("result")
    return result if isinstance(result, Mapping) else {}


def latent_scores(row: Row) -> list[Mapping[str, Any]] | None:
    """The per-latent values a row shows (of the ranking metrics): a verified entry's from its fresh
    draw (the public split's appear only as the gap), any other entry's from its result, a seed
    group's as its runs' mean."""
    if "runs" in row:
        per_run = [latent_scores(run) for run in row["runs"]]
        if not per_run or None in per_run:
            return None
        return [{"factor": cells[0]["factor"],
                 **{k: None if any(c.get(k) is None for c in cells) else statistics.fmean(c[k] for c in cells)
                    for k in ranking_metrics()}}
                for cells in zip(*per_run, strict=True)]
    draw = fresh_draw(row)
    if draw is not None:
        return draw["per_latent"]
    result = row.get("result")
    return result["per_latent"] if isinstance(result, Mapping) else None


def scores(row: Row) -> Mapping[str, float | None]:
    """The scores a row is ranked and shown by: a verified entry's fresh draw (images rendered when it
    was verified, which no model could have memorised), else its public-split metrics."""
    draw = fresh_draw(row)
    return draw["metrics"] if draw else row["metrics"]


def rank_key(row: Row) -> tuple[float | str, ...]:
    """Verified rows first; then the ranking metrics in turn (``ident3d.protocols.ranking_metrics``:
    MCC, then linear R²), the better first, then the ID; a missing value ranks below every number."""
    m = scores(row)

    def place(name: str) -> float:
        value = m.get(name)
        if value is None:
            return math.inf
        return -value if METRICS[name].higher_is_better else value

    return (0 if is_verified(row) else 1, *(place(name) for name in ranking_metrics()), row["id"])


def rank_labels(table: list[Row]) -> list[str]:
    """Each row's rank as shown: verified rows 1, 2, ...; the rows after them (n), in their own order."""
    verified = sum(map(is_verified, table))
    return [str(i + 1) if i < verified else f"({i + 1 - verified})" for i in range(len(table))]


def table_of(entry: Row) -> Table:
    return entry["dataset"], entry["protocol"]


def _mean_and_sd(values: list[float | None]) -> tuple[float | None, float | None]:
    if any(v is None for v in values):
        return None, None
    return statistics.fmean(values), statistics.stdev(values)


def seed_group_row(name: str, runs: list[Row]) -> Row:
    """One row for the runs of ``name``: every metric's mean and sample sd over the runs."""
    first = runs[0]
    for field in GROUP_AGREES_ON:
        differing = sorted({str(status(r) if field == "status" else r.get(field)) for r in runs})
        if len(differing) > 1:
            raise ResultError(f"seed_group {name!r} joins entries that differ in {field} "
                              f"({', '.join(r['id'] for r in runs)}: {' vs '.join(differing)}). Fix: give "
                              "runs of different methods different seed_group values, or correct the field.")
    stats = {key: _mean_and_sd([scores(r).get(key) for r in runs]) for key in per_latent_metrics()}
    return {**{field: first.get(field) for field in GROUP_AGREES_ON}, "status": status(first),
            "id": f"group:{name}", "name": f"{name} (mean of {len(runs)} seeds)", "authors": first["authors"],
            "dataset": first["dataset"], "protocol": first["protocol"], "seed_group": name,
            "footnote": f"mean ± sample sd over {len(runs)} runs that differ only in their seed",
            "metrics": {key: mean for key, (mean, _) in stats.items()},
            "metrics_std": {key: sd for key, (_, sd) in stats.items()},
            "checkpoint_sha256": None, "result": None, "runs": sorted(runs, key=rank_key)}


def grouped(entries: list[Row]) -> list[Row]:
    """One table's rows, best first: seed groups of two or more runs collapse into one row."""
    entries = [shown_entry(e) for e in entries]
    groups: dict[str, list[Row]] = {}
    for entry in entries:
        if entry.get("seed_group"):
            groups.setdefault(entry["seed_group"], []).append(entry)
    rows = [e for e in entries if len(groups.get(e.get("seed_group") or "", [])) < 2]
    rows += [seed_group_row(name, runs) for name, runs in groups.items() if len(runs) >= 2]
    return sorted(rows, key=rank_key)


def archived_entries(entries: list[Row]) -> list[Row]:
    """Entries kept for the record but ranked nowhere (``archived`` says why: superseded, and no model
    file to re-score), by table and ID."""
    shown = (shown_entry(e) for e in entries)
    return sorted((e for e in shown if e.get("archived")), key=lambda e: (*table_of(e), e["id"]))


def ranked_tables(entries: list[Row]) -> dict[Table, list[Row]]:
    """Tables track by track, the track with the most entries first, and within a track the package's
    default protocol first (then the fuller tables, then by name); each's rows ranked best first. The
    page opens on the first table. Archived entries are in no table."""
    from ident3d.protocols import DEFAULT

    tables: dict[Table, list[Row]] = {}
    for entry in map(shown_entry, entries):
        if not entry.get("archived"):
            tables.setdefault(table_of(entry), []).append(entry)
    per_track: dict[str, int] = {}
    for (track, _), rows in tables.items():
        per_track[track] = per_track.get(track, 0) + len(rows)
    order = sorted(tables, key=lambda key: (-per_track[key[0]], key[0], key[1] != DEFAULT,
                                            -len(tables[key]), key[1]))
    return {key: grouped(tables[key]) for key in order}


def placement(entries: list[Row], candidate: Row) -> tuple[int, int, list[Row]]:
    """Where ``candidate`` (a single run) would stand in its table: (its position, rows with it, the
    rows); ``rank_labels`` says what the position is shown as."""
    solo = {**candidate, "seed_group": None}
    table = [e for e in map(shown_entry, entries)
             if table_of(e) == table_of(candidate) and not e.get("archived")]
    rows = grouped([*table, solo])
    return rows.index(solo) + 1, len(rows), rows
