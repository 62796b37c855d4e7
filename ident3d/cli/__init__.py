"""The ``ident3d`` command: one entry point, one module per verb.

Verb modules import their heavy dependencies (torch, bpy, ray) inside ``run`` so that
``ident3d info`` stays fast and works without the optional extras.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from ident3d.errors import Ident3dError

VERBS = ("info", "render", "traverse", "pack", "download", "verify", "train", "evaluate", "leaderboard",
         "demo")


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keep the examples' line breaks and show defaults."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ident3d",
        description="3DIdent identifiability benchmarks: render, load, evaluate, train, compare.",
        epilog="example:\n  ident3d info --variant v2",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars, warnings only")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        module = importlib.import_module(f"ident3d.cli.{verb}")
        p = sub.add_parser(verb, help=module.HELP, description=module.HELP,
                           epilog="example:\n  " + module.EXAMPLE, formatter_class=HelpFormatter)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.run(args) or 0)
    except Ident3dError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


