"""``ident3d import``: the module is not named ``import`` (a Python keyword)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ident3d.cli.arguments import add_dataset_root, split_name
from ident3d.outputs import check_not_an_input, check_output_folder

HELP = "import a split exported with `ident3d export` (checks every image and the latents)"
EXAMPLE = "ident3d import --from exports/cpu-track --split test --data data/imported"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="source", type=Path, required=True, help="the folder of the shards")
    p.add_argument("--split", type=split_name, default="test",
                   help="which exported split, and the split folder to write")
    add_dataset_root(p, "dataset root to write the split into")


def run(args: argparse.Namespace) -> int:
    from ident3d.exchange import import_split

    check_output_folder(args.data, "--data", reads=(args.source,))
    check_not_an_input(args.source, "--from", (args.data / args.split,))
    print(import_split(args.source, args.data, args.split).folder)
    return 0
