"""The docs' charts (ident3d.baselines.charts): one chart drawn as SVG text and as a PNG, the PNG
carrying the digest of what it draws, and a figures folder kept to exactly the figures made."""

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from ident3d.baselines.charts import PALETTE, Chart, figure_axes, png_source

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _chart() -> Chart:
    chart = Chart("R² by step", x_max=10, y_max=1.0, width=200, height=120)
    chart.y_grid([0.0, 0.5, 1.0], "R² (%)", percent=True)
    chart.x_labels([0, 5, 10], "step")
    chart.line([(0, 0.1), (5, 0.6), (10, 0.9)], PALETTE[0], dots=True)
    chart.level(0.3, PALETTE[2])
    chart.key(60, 20, PALETTE[1], "a key")
    chart.slanted(100, "slanted")
    return chart


def test_a_chart_drawn_as_png_shows_its_marks_and_carries_its_digest(tmp_path):
    chart = _chart()
    png = chart.png(scale=2)
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert image.shape == (240, 400, 3)
    for colour in PALETTE[:3]:  # the line, the key's swatch and the dashed level are drawn in their colours
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert (image == rgb).all(axis=-1).sum() > 20, colour
    assert (image < 80).all(axis=-1).sum() > 50  # dark text
    (tmp_path / "chart.png").write_bytes(png)
    assert png_source(tmp_path / "chart.png") == chart.digest()

    moved = _chart()
    moved.line([(0, 0.5), (10, 0.5)], PALETTE[3])
    assert moved.digest() != chart.digest()  # a stale PNG is told by its digest, not by its pixels
    Image.new("RGB", (4, 4)).save(tmp_path / "plain.png")
    assert png_source(tmp_path / "plain.png") is None


def test_the_svg_has_one_element_per_mark():
    svg = _chart().svg()
    assert svg.startswith("<svg ") and svg.endswith("</svg>\n")
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 3
    assert svg.count('stroke-dasharray="5 4"') == 1 and 'transform="rotate(-30 100.0 94)"' in svg
    assert '<text x="56" y="16" font-size="13">R² by step</text>' in svg
    assert ">100</text>" in svg and ">50</text>" in svg  # a fraction ticked in percent, as tables print it
    assert 'transform="rotate(-90 12 ' in svg and ">R² (%)</text>" in svg  # the y axis, named along it
    assert "<desc>x: step; y: R² (%)</desc>" in svg


def test_both_axes_of_a_chart_are_recorded_in_its_svg_and_its_png(tmp_path):
    chart = _chart()
    (tmp_path / "a.svg").write_text(chart.svg())
    (tmp_path / "a.png").write_bytes(chart.png())
    assert figure_axes(tmp_path / "a.svg") == figure_axes(tmp_path / "a.png") == {"x": "step", "y": "R² (%)"}
    Image.new("RGB", (4, 4)).save(tmp_path / "plain.png")
    assert figure_axes(tmp_path / "plain.png") == {}


CHARTS = sorted(p for p in DOCS.rglob("*") if p.suffix == ".svg" or (p.suffix == ".png" and png_source(p)))


@pytest.mark.parametrize("figure", CHARTS, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_committed_chart_names_both_axes_with_a_unit(figure):
    axes = figure_axes(figure)
    assert set(axes) == {"x", "y"}, f"{figure}: axes {axes}. Fix: name them (Chart.x_labels, Chart.y_grid) " \
                                    "and regenerate the figure"
    assert "(" in axes["y"] and ")" in axes["y"], f"{figure}: the y axis {axes['y']!r} gives no unit"


def test_lines_on_one_another_stay_told_apart_by_their_dashes():
    from ident3d.baselines.charts import DASHED, DOTTED

    chart = Chart("three latents at zero", x_max=10, y_max=1.0, width=200, height=120)
    for colour, dash in zip(PALETTE[:3], (None, DASHED, DOTTED), strict=True):
        chart.line([(0, 0.5), (5, 0.5), (10, 0.5)], colour, dash=dash)
    svg = chart.svg()
    assert 'stroke-dasharray="5 4"' in svg and 'stroke-dasharray="1.5 3"' in svg
    image = np.asarray(Image.open(io.BytesIO(chart.png(scale=2))).convert("RGB"))
    for colour in PALETTE[:3]:  # the solid line drawn first still shows through the others' gaps
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert (image == rgb).all(axis=-1).sum() > 20, colour
