"""``ident3d leaderboard compare``: where a result ranks in its (track, protocol) table, the rows
around it (a compact table that fits 100 columns; ``wide``: every column), and per-latent
differences to rank 1 and to the row just above it (a seed group by its runs' mean)."""

from __future__ import annotations

from textwrap import fill

from ident3d.leaderboard.markdown import percent, table_lines
from ident3d.leaderboard.ranking import (
    Row,
    is_verified,
    latent_scores,
    placement,
    rank_key,
    rank_labels,
    reference,
    scores,
    status,
)

AROUND = 2  # rows shown above and below the candidate
TOP = 3  # the table's first rows, shown above the candidate's when they are not among them
WIDTH = 100
NAME = 52  # characters of a row's name in the compact table


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def compact_lines(table: list[Row], labels: list[str], candidate: Row) -> list[str]:
    """rank, name, R², MCC and status of each row, the candidate marked with ``>``; seed groups as
    one row (their mean)."""
    lines = [f"  {'#':>4}  {'name':<{NAME}}  {'R² %':>6}  {'MCC %':>6}  status",
             "  " + "-" * (WIDTH - 2)]
    for label, row in zip(labels, table, strict=True):
        m = scores(row)
        name = _clip(row["name"], NAME)
        mark = ">" if row is candidate else " "
        line = (f"{mark} {label:>4}  {name:<{NAME}}  {percent(m['linear_r2']):>6}  "
                f"{percent(m.get('mcc_pearson')):>6}  {status(row)}")
        lines.append(_clip(line, WIDTH))
    return lines


def standing(table: list[Row], position: int, label: str) -> str:
    """Where the candidate stands: its rank among verified rows, or its place among the others and
    where its scores would put it among the verified rows' fresh scores."""
    candidate = table[position - 1]
    where = f"{candidate['dataset']} · {candidate['protocol']}"
    verified = [row for row in table if is_verified(row)]
    if is_verified(candidate):
        return (f"{label} would rank {position} of {len(verified)} verified rows in {where} (by MCC, then "
                "linear R²)")
    others = len(table) - len(verified)
    if not verified:
        return (f"{label} would rank ({position}) of {others} in {where} (ranked by MCC, then linear R²; no "
                "row of this table is verified, so none of its ranks is a verified one)")
    line = (f"{label} would be listed ({position - len(verified)}) of {others} rows that are not verified "
            f"in {where}, after its {len(verified)} verified rows (ranked by MCC, then linear R²; an "
            "unverified row never ranks above a verified one)")
    among = sorted([*verified, candidate], key=lambda row: rank_key(row)[1:]).index(candidate) + 1
    return line + (f". Were a fresh draw to score it as its public split does, it would rank {among} of "
                   f"{len(verified) + 1} verified rows (`ident3d leaderboard add --checkpoint` verifies a "
                   "model file)")


def against_references(table: list[Row], candidate: Row) -> str:
    """Where the candidate stands against its table's floor (the pixel read-out: no learning) and
    topline (trained on the latents), by MCC and linear R² as the rank reads them."""
    mine = scores(candidate)
    parts = []
    marks = (("floor", "the pixel read-out, no learning"), ("topline", "trained on the latents"))
    for mark, meaning in marks:
        rows = [row for row in table if reference(row) == mark and row is not candidate]
        if not rows:
            parts.append(f"this table marks no {mark} ({meaning}; a row verified in the first record format "
                         "does not sign what it is)")
            continue
        ref = rows[0]
        theirs = scores(ref)
        side = "above" if rank_key(candidate)[1:] < rank_key(ref)[1:] else "below"
        parts.append(f"{side} the {mark} {ref['id']} ({meaning}: MCC {percent(theirs['mcc_pearson'])}, R² "
                     f"{percent(theirs['linear_r2'])}; the candidate MCC {percent(mine['mcc_pearson'])}, R² "
                     f"{percent(mine['linear_r2'])})")
    return "Against the references: " + "; ".join(parts) + "."


def per_latent(entry: Row) -> dict[str, dict[str, float | None]]:
    return {row["factor"]: row for row in latent_scores(entry) or []}


def report(entries: list[Row], candidate: Row, label: str, wide: bool = False) -> str:
    rank, size, table = placement(entries, candidate)
    labels = rank_labels(table)
    candidate = table[rank - 1]  # the table's own row for it
    lines = [fill(standing(table, rank, label), WIDTH), fill(against_references(table, candidate), WIDTH)]
    if candidate["dataset"].startswith("custom:"):
        lines.append("(custom data: no track verified this split, so only results on the very same "
                     "data share this table; see `ident3d tracks`)")
    low, high = max(0, rank - 1 - AROUND), min(size, rank + AROUND)
    if wide:
        lines += ["", *table_lines(table[low:high], labels[low:high])]
    else:
        shown = compact_lines(table[low:high], labels[low:high], candidate)
        if low > TOP:  # the top of the table, then the candidate's neighbourhood
            shown[2:2] = [*compact_lines(table[:TOP], labels[:TOP], candidate)[2:], f"  {'…':>4}"]
        elif low > 0:
            shown = compact_lines(table[:high], labels[:high], candidate)
        lines += ["", *shown]
    if rank == 1 or not per_latent(candidate):
        return "\n".join(lines)
    compared = {"rank 1": table[0]}  # a seed group by its runs' mean per latent
    if rank > 2:
        compared["next above"] = table[rank - 2]
    against = " and ".join(f"{k} ({v['id']})" for k, v in compared.items())
    lines += ["", fill(f"per-latent linear R² and MCC (%), and the difference to {against}", WIDTH), ""]
    short = {"rank 1": "top", "next above": "above"}
    header = f"{'latent':<18}{'R²':>8}{'MCC':>8}" + "".join(
        f"{'Δ R² ' + short[k]:>12}{'Δ MCC ' + short[k]:>12}" for k in compared)
    lines.append(header)
    mine = per_latent(candidate)
    for factor, row in mine.items():
        cells = f"{factor:<18}{percent(row['linear_r2']):>8}{percent(row['mcc_pearson']):>8}"
        for ref in compared.values():
            other = per_latent(ref).get(factor, {})
            for key in ("linear_r2", "mcc_pearson"):
                a, b = row.get(key), other.get(key)
                cells += f"{'–' if a is None or b is None else f'{100 * (a - b):+.2f}':>12}"
        lines.append(cells)
    return "\n".join(lines)
