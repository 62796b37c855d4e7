"""Block identifiability of the leaderboard's content/style entries as the table of docs/evaluation.md:
for every ranked entry whose result has the ``blocks`` section (scored on a content/style split), the mean
linear and kernel R² of the content block and of the style block (von Kügelgen et al., NeurIPS 2021).

    python -m ident3d.baselines.reports --write --only blocks-entries    # into docs/evaluation.md

``python -m ident3d.baselines.reports --check`` fails when the committed table is stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ident3d.leaderboard.ranking import shown_result


def _pair(blocks: Mapping[str, Any], block: str) -> str:
    return " / ".join("–" if blocks.get(f"{block}_{key}") is None else f"{100 * blocks[f'{block}_{key}']:.1f}"
                      for key in ("linear_r2", "kernel_r2"))


def section(entries: list[Mapping[str, Any]]) -> str:
    shown = [e for e in entries if shown_result(e).get("blocks") and e["protocol"] == "ident3d-eval-v1"
             and not e.get("archived")]  # an archived entry is ranked nowhere: the board lists it apart
    lines = []
    if not shown:
        lines.append("No entry has been scored on a content/style split yet.")
    else:
        lines += ["| entry | data | style latents | content R² (linear / kernel) | style R² "
                  "(linear / kernel) |", "|---|---|---|---:|---:|"]
        for entry in shown:
            blocks = shown_result(entry)["blocks"]  # a verified entry's fresh draw
            lines.append(f"| {entry['name']} (`{entry['id']}`) | `{entry['dataset']}` | "
                         f"{', '.join(blocks['style_factors'])} | {_pair(blocks, 'content')} | "
                         f"{_pair(blocks, 'style')} |")
        lines += ["", "Percent, the mean over each block's latents (ident3d-eval-v1 read-outs). A content "
                  "encoder should score high on content and low on style."]
    return "\n".join(lines)

