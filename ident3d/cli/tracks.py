from __future__ import annotations

import argparse

HELP = "list the benchmark tracks: their data, sizes, render time on 2 CPU cores and disk size"
EXAMPLE = ("ident3d tracks\n"
           "  ident3d render --track 3dident-v2-64 --split test --out data/cpu-track --workers 2\n"
           "  ident3d verify data/cpu-track --track 3dident-v2-64 --split test")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print the README table instead")


def _size(n_bytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n_bytes < 1000 or unit == "TB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1000
    return ""


def _time(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def rows() -> list[list[str]]:
    from ident3d.tracks import tracks

    out = []
    for t in tracks().values():
        sizes = ", ".join(f"{name} {spec.n:,}" for name, spec in t.splits.items())
        if t.source == "download":
            cost = "download (Zenodo)"
        else:
            test = t.splits["test"].n
            cost = (f"test {_time(test * t.render_s_per_image)}, {_size(test * t.bytes_per_image)}; "
                    f"all {_time(sum(s.n for s in t.splits.values()) * t.render_s_per_image)}, "
                    f"{_size(sum(s.n for s in t.splits.values()) * t.bytes_per_image)}")
        out.append([t.id, t.variant, f"{t.resolution} px", sizes, cost, t.description])
    return out


def run(args: argparse.Namespace) -> int:
    header = ["track", "variant", "size", "images", "render on 2 CPU cores, disk", "what it is"]
    table = rows()
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in table:
            print("| " + " | ".join(f"`{row[0]}`" if i == 0 else c for i, c in enumerate(row)) + " |")
        return 0
    for row in table:
        print(f"{row[0]}  ({row[1]}, {row[2]}; {row[3]})\n  {row[5]}\n  render: {row[4]}\n")
    return 0
