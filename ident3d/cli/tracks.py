from __future__ import annotations

import argparse

HELP = "list the benchmark tracks: their data, sizes, render time on 2 CPU cores and disk size"
EXAMPLE = ("ident3d tracks\n"
           "  ident3d render --track 3dident-v2-64 --split test --data data/cpu-track --workers 2\n"
           "  ident3d audit --data data/cpu-track --track 3dident-v2-64 --split test")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true",
                   help="print the table as Markdown (docs/tracks.md holds it)")


def run(args: argparse.Namespace) -> int:
    from ident3d.tracks import markdown_block, summary_rows

    if args.markdown:
        print(markdown_block())
        return 0
    for row in summary_rows():
        print(f"{row[0]}  ({row[1]}, {row[2]}; {row[3]})\n  {row[5]}\n  render: {row[4]}\n")
    return 0
