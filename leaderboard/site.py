"""The static page: one self-contained HTML file (inline CSS, JS and data; no network)."""

from __future__ import annotations

import json
from importlib.resources import files

from ident3d.latents import FACTOR_NAMES
from leaderboard.ranking import Entry, ranked_tables

PAGE_FIELDS = ("id", "name", "paper", "code", "authors", "positives", "loss", "model_space", "status",
               "footnote", "dataset", "protocol", "metrics", "metrics_std")


def page_data(entries: list[Entry]) -> dict:
    rows = []
    for entry in entries:
        row = {k: entry.get(k) for k in PAGE_FIELDS}
        result = entry["result"]
        row["per_latent"] = ([{k: p.get(k) for k in ("factor", "linear_r2", "mcc_pearson")}
                              for p in result["per_latent"]] if result else None)
        rows.append(row)
    return {"entries": rows, "factors": list(FACTOR_NAMES),
            "tables": [list(key) for key in ranked_tables(entries)]}


def render_site(entries: list[Entry]) -> str:
    data = json.dumps(page_data(entries), sort_keys=True, ensure_ascii=False)
    data = data.replace("</", "<\\/")  # the JSON sits inside a <script> element
    template = files("leaderboard").joinpath("page.html").read_text(encoding="utf-8")
    return template.replace("__ENTRIES_JSON__", data)
