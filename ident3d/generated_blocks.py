"""Write a generated block into README.md or a documentation page between its two marker lines (the
markers stay): the measured tables (benchmarks/) and the report sections (ident3d.baselines) that
tests hold to what their command computes."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ident3d import atomic

README = Path(__file__).resolve().parent.parent / "README.md"


def write_block(block: str, begin: str, end: str, page: Path = README) -> None:
    """Replace the text from ``begin`` to ``end`` (both included; ``block`` starts and ends with them)."""
    text = page.read_text()
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise SystemExit(f"error: {page} must hold the markers {begin!r} and {end!r} once each, in that "
                         "order. Fix: put both lines back where the block belongs.")
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    atomic.write_bytes(page, (head + block + tail).encode())


def section_command(argv: list[str] | None, description: str, make: Callable[[], str], begin: str, end: str,
                    page: Path) -> int:
    """The command line of a generated section: print it, and with ``--write`` put it into ``page``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", action="store_true", help=f"write the section into {page.name}")
    args = parser.parse_args(argv)
    text = make()
    if args.write:
        write_block(text, begin, end, page)
    print(text)
    return 0
