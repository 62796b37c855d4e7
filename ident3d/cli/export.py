from __future__ import annotations

import argparse
from pathlib import Path

from ident3d.cli.arguments import add_dataset_root, positive_int, split_name
from ident3d.outputs import check_output_folder

HELP = "export a split as Parquet shards (Hugging Face datasets) or WebDataset tar shards"
EXAMPLE = ("ident3d export --data data/cpu-track --split test --format parquet --out exports/cpu-track\n"
           "  ident3d export --data data/cpu-track --split train --format webdataset --out exports/wds")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ident3d.exchange import FORMATS

    add_dataset_root(p, "dataset root holding the split")
    p.add_argument("--split", type=split_name, default="test", help="split folder to export")
    p.add_argument("--format", required=True, choices=FORMATS, help="shard format")
    p.add_argument("--out", type=Path, required=True, help="folder for the shards (new or empty of them)")
    p.add_argument("--shard-size", type=positive_int, default=10_000, help="images per shard")


def run(args: argparse.Namespace) -> int:
    from ident3d.exchange import export_split

    check_output_folder(args.out, "--out", reads=(args.data,))
    for path in export_split(args.data, args.split, args.out, args.format, args.shard_size):
        print(path)
    return 0
