"""The static page: one self-contained HTML file (inline CSS, JS and data; no network)."""

from __future__ import annotations

import json
from importlib.resources import files

from ident3d.leaderboard.companions import columns, companion_metrics, metric_columns
from ident3d.leaderboard.legend import meanings
from ident3d.leaderboard.ranking import (
    REFERENCES,
    Row,
    archived_entries,
    claim_problem,
    fresh_draw,
    latent_scores,
    rank_labels,
    ranked_tables,
    reference,
    scores,
    signer,
    status,
)
from ident3d.protocols import per_latent_metrics, ranking_metrics
from ident3d.results import gap_verdict
from ident3d.tracks import tracks

PAGE_FIELDS = ("id", "name", "paper", "code", "authors", "positives", "loss", "model_space", "status",
               "footnote", "dataset", "protocol", "metrics", "metrics_std")


def page_row(row: Row) -> dict:
    """What the page shows of a table row; a seed group carries its runs and their mean per latent."""
    shown = {k: row.get(k) for k in PAGE_FIELDS}
    shown["status"], shown["signer"], shown["claim"] = status(row), signer(row), claim_problem(row)
    shown["reference"] = reference(row)  # topline or floor, marked beside the name
    shown["metrics"] = dict(scores(row))  # a verified row's fresh draw
    draw = fresh_draw(row)
    shown["fresh"] = {"n": draw["n"], "public": row["metrics"], "gap": draw["gap"],
                      "memorised": draw["memorised"],
                      "verdict": gap_verdict(draw, draw["gap"], row["protocol"])} if draw else None
    shown["companions"] = companion_metrics(row)  # DCI, extrapolation and OOD, where the result has them
    if "runs" in row:
        shown["runs"] = [page_row(run) for run in row["runs"]]
    latents = latent_scores(row)  # a verified row's from its fresh draw, a seed group's as its runs' mean
    shown["per_latent"] = ([{k: p.get(k) for k in ("factor", *ranking_metrics())} for p in latents]
                           if latents else None)
    return shown


def page_data(entries: list[Row]) -> dict:
    tables = ranked_tables(entries)
    # the rank is computed here, by leaderboard/ranking.py's rule, and never again in the page
    rows = [{**page_row(row), "rank": rank, "rank_label": label} for table in tables.values()
            for rank, (label, row) in enumerate(zip(rank_labels(table), table, strict=True), start=1)]
    known = {t.id: {"title": t.title, "description": t.description} for t in tracks().values()}
    archived = [{**page_row(e), "archived": e["archived"]} for e in archived_entries(entries)]
    return {"entries": rows, "archived": archived, "legend": meanings(), "references": REFERENCES,
            "metrics": list(per_latent_metrics()),
            "metric_columns": [[m.name, m.label, m.higher_is_better, m.rank is not None]
                               for m in metric_columns()],
            "companion_columns": [[m.name, m.label, m.higher_is_better] for m in columns()],
            "tables": [[track, protocol, len(rows)] for (track, protocol), rows in tables.items()],
            "tracks": {track: known[track] for track, _ in tables if track in known}}


# Inside <script>, "<!--", "</script" or "<script" in a string would end or bend the element;
# U+2028/9 break older JavaScript parsers. As \\u escapes they are the same JSON strings.
SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                  "\u2029": "\\u2029"}


def script_json(data: object) -> str:
    """JSON that can sit inside a <script> element whatever its strings hold."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return "".join(SCRIPT_ESCAPES.get(c, c) for c in text)


def render_site(entries: list[Row]) -> str:
    data = script_json(page_data(entries))
    template = files("ident3d.leaderboard").joinpath("page.html").read_text(encoding="utf-8")
    return template.replace("__ENTRIES_JSON__", data)
