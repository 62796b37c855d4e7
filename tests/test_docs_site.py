"""The documentation site builds from docs/ in MkDocs' strict mode: a broken link, a page left out of
the navigation or an API reference that does not resolve fails the build, and so this test."""

import os
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
