"""Every generated artefact is what its producer makes from the committed data (ident3d.baselines.reports),
and the one command that checks them names the block whose number was edited by hand."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ident3d.baselines import reports
from ident3d.baselines.charts import PALETTE, Chart, png_source

ROOT = Path(__file__).resolve().parents[1]
READ_ONLY = ("leaderboard/entries", "baselines/curves", "baselines/synthetic/results", "benchmarks/measured")
PAGES = ("docs", "README.md", "LEADERBOARD.md", "leaderboard/site")


@pytest.fixture(scope="module")
def sources():
    return reports.Sources(ROOT)


@pytest.mark.parametrize("artefact", reports.artefacts(), ids=lambda a: a.name)
def test_every_generated_artefact_is_what_its_producer_makes(artefact, sources):
    assert reports.stale(artefact, sources) == [], \
        f"{artefact.name} is stale. Fix: python -m ident3d.baselines.reports --write --only {artefact.name}"


def test_names_are_unique_and_every_page_holds_its_markers_once():
    names = [a.name for a in reports.artefacts()]
    assert len(names) == len(set(names))
    for block in (a for a in reports.artefacts() if isinstance(a, reports.Block)):
        text = (ROOT / block.page).read_text()
        assert text.count(block.begin) == 1 and text.count(block.end) == 1, block.name


@pytest.fixture
def checkout(tmp_path):
    """A copy of the generated pages beside links to the committed data they are made from."""
    for part in READ_ONLY:
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / part).symlink_to(ROOT / part)
    for part in PAGES:
        copy = shutil.copytree if (ROOT / part).is_dir() else shutil.copy2
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        copy(ROOT / part, tmp_path / part)
    return tmp_path


@pytest.mark.slow
def test_a_number_edited_by_hand_fails_the_check_naming_its_block(checkout, capsys):
    reports.main(["--write"], root=checkout)  # current, even while new results arrive in a working tree
    capsys.readouterr()
    page = checkout / "docs/cpu-track.md"
    text = page.read_text()
    block = next(a for a in reports.artefacts() if a.name == "anisotropy")
    start = text.index(block.begin)
    digit = next(i for i in range(start + len(block.begin), text.index(block.end)) if text[i].isdigit())
    page.write_text(text[:digit] + str((int(text[digit]) + 1) % 10) + text[digit + 1:])
    assert reports.main(["--check"], root=checkout) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == ["stale: anisotropy (docs/cpu-track.md)"]
    assert err.startswith("error: 1 generated file(s) differ") and "reports --write" in err
    assert reports.main(["--write", "--only", "anisotropy"], root=checkout) == 0
    assert page.read_text() == text and reports.main(["--check"], root=checkout) == 0


def test_a_page_without_its_markers_is_one_error_line_and_nothing_is_written(checkout, capsys):
    page = checkout / "docs/tracks.md"
    page.write_text(page.read_text().replace("<!-- tracks:end -->", ""))
    before = {p: p.read_bytes() for p in checkout.rglob("*") if p.is_file() and not p.is_symlink()}
    assert reports.main(["--write"], root=checkout) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {page} must hold the markers")
    assert {p: p.read_bytes() for p in before} == before
    assert reports.main(["--check", "--only", "no-such"], root=checkout) == 2
    assert "--only no-such: no such artefact" in capsys.readouterr().err


def test_a_figures_folder_keeps_exactly_the_figures_made(tmp_path):
    chart = Chart("R² by step", x_max=10, y_max=1.0, width=200, height=120)
    chart.line([(0, 0.1), (10, 0.9)], PALETTE[0])
    folder = tmp_path / "figures"
    folder.mkdir()
    (folder / "old.svg").write_text("<svg/>")
    (folder / "notes.md").write_text("kept")
    figures = reports.Files("figures", lambda s: {"figures/a.png": chart, "figures/a.svg": chart.svg()},
                            folder="figures")
    sources = reports.Sources(tmp_path)
    assert sorted(p.name for p in reports.stale(figures, sources)) == ["a.png", "a.svg", "old.svg"]
    reports.write(figures, sources)
    assert sorted(p.name for p in folder.iterdir()) == ["a.png", "a.svg", "notes.md"]
    assert png_source(folder / "a.png") == chart.digest() and reports.stale(figures, sources) == []


def test_a_traversal_figure_is_stale_when_its_renderer_or_recipe_moves(tmp_path, monkeypatch):
    """Redrawing a traversal takes Blender, so a figure is judged by the recipe digest its PNG carries:
    the grids it draws and every source file of the renderer and the variants."""
    import shutil

    from PIL import Image, PngImagePlugin

    from ident3d.baselines import traversal_figures as tf

    figure = tf.TraversalFigure((tf.Grid("v2", "preview", 32),))
    info = PngImagePlugin.PngInfo()
    info.add_text(tf.RECIPE_KEY, figure.digest())
    Image.new("RGB", (8, 8)).save(tmp_path / "fig.png", pnginfo=info)
    Image.new("RGB", (8, 8)).save(tmp_path / "plain.png")
    row = reports.Files("fig", lambda s: {"fig.png": figure, "plain.png": figure})
    sources = reports.Sources(tmp_path)
    assert reports.stale(row, sources) == [tmp_path / "plain.png"]  # no digest: stale
    assert tf.TraversalFigure((tf.Grid("v2", "preview", 48),)).digest() != figure.digest()

    package = tmp_path / "package"
    for folder in tf.RENDERER:
        shutil.copytree(tf.PACKAGE / folder, package / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(tf, "PACKAGE", package)
    assert figure.digest() == png_source(tmp_path / "fig.png", tf.RECIPE_KEY)  # same sources, same digest
    scene = package / "render" / "blender_scene.py"
    scene.write_text(scene.read_text() + "\n# a changed scene\n")
    assert reports.stale(row, sources) == [tmp_path / "fig.png", tmp_path / "plain.png"]


def test_the_reports_regenerate_without_torchvision_and_parse_each_experiment_once():
    """Regenerating the docs reads committed data: no model code (torchvision) is imported, and the
    experiment file several producers read is parsed once."""
    code = ("import sys\n"
            "from ident3d.baselines import experiment, reports\n"
            "code = reports.main(['--check'])\n"
            "print(code, 'torchvision' in sys.modules, experiment._parsed.cache_info().misses)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    code, torchvision, parses = out.stdout.splitlines()[-1].split()
    assert (code, torchvision) == ("0", "False"), out.stderr
    assert int(parses) == 1  # baselines/cpu_track.toml, read by five producers
