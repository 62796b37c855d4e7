from __future__ import annotations

import argparse
from pathlib import Path

HELP = "check a dataset: layout, counts, latent ranges, every image decodes, checksums"
EXAMPLE = "ident3d verify data/3dident --split test --quick"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("root", type=Path, help="dataset root")
    p.add_argument("--split", action="append", help="split to check (repeatable; default: all)")
    p.add_argument("--quick", action="store_true", help="decode a sample of 100 images per split")


def run(args: argparse.Namespace) -> int:
    from ident3d.verify import verify_split

    splits = args.split or sorted(p.parent.name for p in args.root.glob("*/raw_latents.npy"))
    if not splits:
        print(f"{args.root}: no split found (no */raw_latents.npy)")
        return 1
    failed = False
    for split in splits:
        checked, problems = verify_split(args.root, split, args.quick)
        print(f"{split}: {checked} images checked, {len(problems)} problems")
        for problem in problems:
            print(f"  - {problem}")
        failed |= bool(problems)
    return 1 if failed else 0
