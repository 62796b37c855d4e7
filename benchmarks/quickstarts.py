"""The README's quickstarts at their own sizes: each numbered quickstart's commands and code, run in a
scratch folder in order, timed, beside the time its heading states.

    python -m benchmarks.quickstarts [--scratch DIR]   (repo root; about 20 minutes on 2 cores)

The leaderboard commands write into the scratch folder (a copy of the committed entries), never
into the repository. tests/test_readme.py runs the same lines at a smaller size and prints its own
times per quickstart with the same parser.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
HEADING = re.compile(r"^### (\d+)\. (.+?) \(([^)]+)\)$", flags=re.M)


@dataclass(frozen=True)
class Quickstart:
    number: int
    title: str
    stated: str  # what its heading promises, e.g. "about 3 minutes"
    blocks: tuple[tuple[str, str], ...]  # (language, text) in page order


def code_blocks(text: str) -> list[tuple[str, str]]:
    """Every ```bash and ```python block of a Markdown page, in order (``text`` blocks are not run)."""
    return re.findall(r"```(bash|python)\n(.*?)```", text, flags=re.S)


def bash_commands(block: str) -> list[str]:
    """A bash block's commands, comments stripped."""
    lines = [line.split("  #")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def quickstarts(text: str) -> list[Quickstart]:
    """The numbered ``### N. Title (time)`` sections of the README, each with its code blocks."""
    heads = list(HEADING.finditer(text))
    if not heads:
        return []
    after = text.find("\n## ", heads[-1].end())  # the last quickstart ends at the next section
    ends = [h.start() for h in heads[1:]] + [after if after >= 0 else len(text)]
    return [Quickstart(int(h[1]), h[2], h[3], tuple(code_blocks(text[h.end():end])))
            for h, end in zip(heads, ends, strict=True)]


def leaderboard_flags(argv: list[str], scratch: Path) -> list[str]:
    """A leaderboard command's flags that keep its writes in ``scratch`` (entries, Markdown, page)."""
    if argv[:2] != ["ident3d", "leaderboard"]:
        return []
    flags = ["--entries", str(scratch / "entries")]
    if argv[2] == "build":
        flags += ["--markdown", str(scratch / "LEADERBOARD.md"), "--site", str(scratch / "site/index.html")]
    return flags


def run_quickstart(quickstart: Quickstart, scratch: Path) -> float:
    """Run one quickstart's lines at their own sizes in ``scratch``; its wall time in seconds."""
    start = time.perf_counter()
    for language, block in quickstart.blocks:
        if language == "python":
            commands = [[sys.executable, "-c", block]]
        else:
            cli = [sys.executable, "-m", "ident3d.cli", "-q"]
            commands = [[*cli, *argv[1:], *leaderboard_flags(argv, scratch)]
                        for argv in map(shlex.split, bash_commands(block))]
        for command in commands:
            subprocess.run(command, cwd=scratch, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, help="an empty or missing folder (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = args.scratch or Path(tmp)
        if scratch.exists() and any(scratch.iterdir()):
            raise SystemExit(f"error: --scratch {scratch} is not empty; the quickstarts start from nothing. "
                             "Fix: name a missing or empty folder.")
        from ident3d.leaderboard.entries import ENTRIES_DIR

        shutil.copytree(ENTRIES_DIR, scratch / "entries")
        print("| quickstart | stated | measured on this machine |\n|---|---|---|")
        for quickstart in quickstarts(README.read_text()):
            seconds = run_quickstart(quickstart, scratch)
            name = f"{quickstart.number}. {quickstart.title}"
            print(f"| {name} | {quickstart.stated} | {seconds / 60:.1f} min |", flush=True)


if __name__ == "__main__":
    main()
