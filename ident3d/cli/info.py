from __future__ import annotations

import argparse

HELP = "print a variant's dataset card: its latents, ranges, scene meaning and causal model"
EXAMPLE = "ident3d info --variant legacy\n  ident3d info --variant my-variant.toml"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ident3d.cli.arguments import VARIANT_HELP, variant_arg

    p.add_argument("--variant", default="v2", type=variant_arg, help=VARIANT_HELP)


def run(args: argparse.Namespace) -> int:
    from ident3d.card import dataset_card

    print(dataset_card(args.variant))
    return 0
