"""The documentation site builds from docs/ in MkDocs' strict mode: a broken link, a page left out of
the navigation or an API reference that does not resolve fails the build, and so this test."""

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def build(folder: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.mark.slow
def test_docs_site_builds_in_strict_mode(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    done = build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "site/api/index.html").read_text()
    assert 'id="ident3d.datasets.ThreeDIdent"' in api and 'id="ident3d.publish.publish"' in api
    # Constructors show their signature with parameters, types and defaults, and an example.
    text = html.unescape(re.sub(r"<[^>]+>", "", api))
    for signature in ("ContrastivePairs(\n    dataset: ThreeDIdent,", "epoch_length: int | None = None",
                      "pin_memory: bool = False", "protocol: str = DEFAULT",
                      'split: str = "train"'):
        assert signature in text, signature
    assert text.count("Example") >= 7
    # The site's search finds the API entries by their short names.
    index = json.loads((tmp_path / "site/search/search_index.json").read_text())
    separator = re.compile(index["config"]["separator"])
    def words(text: str) -> set[str]:  # as the search splits the page and the query
        return {w.lower() for w in separator.split(text) if w}

    for name in ("PairLoader", "ThreeDIdent", "ContrastivePairs", "RenderedPairs", "evaluate"):
        hits = [doc["location"] for doc in index["docs"] if words(name) <= words(doc["title"])]
        assert any(hit.startswith("api/#") for hit in hits), name  # the entry's own heading
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").glob("*.md")}
    built = {p.parent.name + ".md" for p in (tmp_path / "site").glob("*/index.html")}
    assert pages - {"index.md"} <= built, pages - built


def test_a_broken_link_fails_the_strict_build(tmp_path):
    pytest.importorskip("mkdocs")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with open(tmp_path / "docs/faq.md", "a") as f:
        f.write("\nSee [the missing page](missing.md).\n")
    done = build(tmp_path, tmp_path / "site")
    assert done.returncode != 0 and "missing.md" in done.stderr


def test_the_home_pages_code_fits_its_column():
    # the site's content column holds about 80 characters of code at 1,280 px: a longer line is cut
    # off behind a scroll bar on the page a newcomer reads first
    text = (REPO / "docs/index.md").read_text()
    blocks = re.findall(r"```\w*\n(.*?)```", text, flags=re.S)
    code = [line for block in blocks for line in block.splitlines()]
    assert code and max(map(len, code)) <= 80, max(code, key=len)
