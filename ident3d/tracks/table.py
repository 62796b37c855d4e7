"""The tracks as a table for people: ``ident3d tracks`` and the Markdown block of
docs/tracks.md (render time and disk size on this project's 2-core machines)."""

from __future__ import annotations

from ident3d.tracks import registry


def _size(n_bytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n_bytes < 1000 or unit == "TB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1000
    return ""


def _time(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def summary_rows() -> list[list[str]]:
    """Per track: id, variant, size, images per split, render time and disk, description."""
    out = []
    for t in registry.tracks().values():
        sizes = ", ".join(f"{name} {spec.n:,}" for name, spec in t.splits.items())
        if t.source == "download":
            cost = ("download (Zenodo); archive sizes not stated in the record's text nor measured here "
                    "(no access): `ident3d download` shows them")
        else:
            test = t.splits["test"].n
            cost = (f"test {_time(test * t.render_s_per_image)}, {_size(test * t.bytes_per_image)}; "
                    f"all {_time(sum(s.n for s in t.splits.values()) * t.render_s_per_image)}, "
                    f"{_size(sum(s.n for s in t.splits.values()) * t.bytes_per_image)}")
        out.append([t.id, t.variant, f"{t.resolution} px", sizes, cost, t.description])
    return out


def markdown_block() -> str:
    """The table of tracks in docs/tracks.md."""
    header = ["track", "variant", "size", "images", "render on 2 CPU cores, disk", "what it is"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in summary_rows():
        lines.append("| " + " | ".join(f"`{row[0]}`" if i == 0 else c for i, c in enumerate(row)) + " |")
    return "\n".join(lines)
