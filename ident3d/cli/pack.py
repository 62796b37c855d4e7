from __future__ import annotations

import argparse
from pathlib import Path

HELP = "pack a split's PNGs into one memory-mapped uint8 array (images.npy) for fast loading"
EXAMPLE = "ident3d pack data/3dident --split train"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("root", type=Path, help="dataset root")
    p.add_argument("--split", default="train", help="split folder to pack")


def run(args: argparse.Namespace) -> int:
    from ident3d.packing import pack_split

    print(pack_split(args.root, args.split, progress=not args.quiet).packed)
    return 0
