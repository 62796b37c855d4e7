"""Build LEADERBOARD.md and leaderboard/site/index.html from the entries; detect stale outputs.

Building is a pure function of the entry files, so two builds give identical bytes and CI can
compare the committed outputs with a fresh build.
"""

from __future__ import annotations

from pathlib import Path

from ident3d import atomic
from leaderboard.entries import ENTRIES_DIR, load_entries
from leaderboard.markdown import render_markdown
from leaderboard.site import render_site

# Where the committed outputs of this repository live (what CI checks against the entries).
REPOSITORY = ENTRIES_DIR.parent.parent
MARKDOWN = REPOSITORY / "LEADERBOARD.md"
SITE = ENTRIES_DIR.parent / "site" / "index.html"


def outputs(entries_dir: Path = ENTRIES_DIR, markdown: Path = MARKDOWN, site: Path = SITE
            ) -> dict[Path, bytes]:
    entries = load_entries(entries_dir)
    return {Path(markdown): render_markdown(entries).encode(), Path(site): render_site(entries).encode()}


def build(entries_dir: Path, markdown: Path, site: Path) -> list[Path]:
    """Write both outputs (the caller names where: never inside an installed package)."""
    written = []
    for path, content in outputs(entries_dir, markdown, site).items():
        atomic.write_bytes(path, content)
        written.append(path)
    return written


def stale(entries_dir: Path = ENTRIES_DIR, markdown: Path = MARKDOWN, site: Path = SITE) -> list[Path]:
    """Outputs that are missing or differ from a fresh build."""
    return [path for path, content in outputs(entries_dir, markdown, site).items()
            if not path.exists() or path.read_bytes() != content]
