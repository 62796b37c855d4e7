from __future__ import annotations

import argparse

HELP = "print the dataset card: the 10 factors, their ranges and scene meaning"
EXAMPLE = "ident3d info --variant legacy --markdown"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ident3d.scene import MAPPINGS

    p.add_argument("--variant", default="v2", choices=sorted(MAPPINGS), help="scene mapping")
    p.add_argument("--markdown", action="store_true",
                   help="print the README block with its markers (to paste into README.md)")


def run(args: argparse.Namespace) -> int:
    from ident3d.card import dataset_card, readme_card_block

    print(readme_card_block(args.variant) if args.markdown else dataset_card(args.variant))
    return 0
