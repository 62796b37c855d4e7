from __future__ import annotations

import argparse

from ident3d.cli.arguments import add_dataset_root, split_name

HELP = "pack a split's PNGs into one memory-mapped uint8 array (images.npy) for fast loading"
EXAMPLE = "ident3d pack --data data/3dident --split train"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_dataset_root(p, "dataset root holding the split", old_positional=True)
    p.add_argument("--split", type=split_name, default="train", help="split folder to pack")


def run(args: argparse.Namespace) -> int:
    from ident3d.packing import pack_split

    print(pack_split(args.data, args.split, progress=not args.quiet).packed)
    return 0
