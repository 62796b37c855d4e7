"""Small standalone charts for the figures in docs/ (no plotting dependency): a white frame with a
title, a y grid, and lines, bars, legend keys and labels placed in data coordinates, written as SVG
text or drawn as a PNG with Pillow.

The figures are generated files with staleness tests, so the output is deterministic: an SVG is plain
text, and a PNG carries the SHA-256 of its chart's SVG (``png_source``), so that a test can tell a
stale PNG without comparing pixels, which depend on the Pillow version that drew them.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from PIL import Image, ImageDraw, ImageFont, PngImagePlugin

# ten distinguishable colours (Tableau 10)
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
PNG_SOURCE_KEY = "ident3d-chart-sha256"  # the PNG text chunk holding the SHA-256 of the chart's SVG
PNG_AXES_KEY = "ident3d-chart-axes"  # the PNG text chunk naming its axes, as the SVG's <desc> does
FONT_SIZE = 11
PLAIN_GLYPHS = {"—": "-", "–": "-", "×": "x"}  # drawn in the PNG as these: Pillow's bundled font lacks them


def ticks(top: float, count: int = 6) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) from 0 up to ``top``."""
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [step * i for i in range(int(top // step) + 1)]


def _n(value: float) -> str:
    """A coordinate as the SVG writes it: integers as they are, other values to one decimal."""
    return str(value) if isinstance(value, int) else f"{value:.1f}"


@dataclass(frozen=True)
class _Line:
    x1: float
    y1: float
    x2: float
    y2: float
    colour: str
    dashed: bool = False

    def svg(self) -> str:
        dash = f' stroke-dasharray="{DASHED[0]:g} {DASHED[1]:g}"' if self.dashed else ""
        return (f'<line x1="{_n(self.x1)}" x2="{_n(self.x2)}" y1="{_n(self.y1)}" y2="{_n(self.y2)}" '
                f'stroke="{self.colour}"{dash}/>')

    def draw(self, canvas: _Canvas) -> None:
        ends = ((self.x1, self.y1), (self.x2, self.y2))
        for piece in _dash_pieces(ends, DASHED if self.dashed else None):
            canvas.draw.line(canvas.points(piece), self.colour, width=canvas.scale)


DASHED, DOTTED = (5.0, 4.0), (1.5, 3.0)  # (drawn, left out) along a line, as an SVG dash array


def _dash_pieces(points: Sequence[tuple[float, float]], dash: tuple[float, float] | None
                 ) -> list[tuple[tuple[float, float], ...]]:
    """The drawn pieces of a polyline under a dash pattern, the pattern running on across its
    corners (as SVG draws it); without a pattern, the polyline itself."""
    if dash is None:
        return [tuple(points)]
    on, off = dash
    pieces, phase = [], 0.0  # how far into the current (on + off) period the walk is
    for (x1, y1), (x2, y2) in zip(points[:-1], points[1:], strict=True):
        length, done = math.hypot(x2 - x1, y2 - y1), 0.0
        while done < length:
            drawing = phase < on
            step = min((on if drawing else on + off) - phase, length - done)
            if drawing:
                a, b = done / length, (done + step) / length
                pieces.append(((x1 + a * (x2 - x1), y1 + a * (y2 - y1)),
                               (x1 + b * (x2 - x1), y1 + b * (y2 - y1))))
            done, phase = done + step, (phase + step) % (on + off)
    return pieces


@dataclass(frozen=True)
class _Text:
    x: float
    y: float
    text: str
    anchor: str = "start"
    size: int | None = None  # None: the chart's FONT_SIZE
    rotate: float = 0.0  # degrees, clockwise positive as in SVG

    def svg(self) -> str:
        size = f' font-size="{self.size}"' if self.size is not None else ""
        anchor = f' text-anchor="{self.anchor}"' if self.anchor != "start" else ""
        turn = f' transform="rotate({self.rotate:g} {_n(self.x)} {_n(self.y)})"' if self.rotate else ""
        return f'<text x="{_n(self.x)}" y="{_n(self.y)}"{size}{anchor}{turn}>{self.text}</text>'

    def draw(self, canvas: _Canvas) -> None:
        size = self.size or FONT_SIZE
        x, y = canvas.points([(self.x, self.y)])[0]
        if not self.rotate:
            _draw_text(canvas.image, (x, y), self.text, canvas, size, self.anchor)
            return
        # drawn on its own transparent layer around the anchor point, turned about it, laid over
        reach = 2 * size * canvas.scale + int(canvas.font(size).getlength(self.text))
        layer = Image.new("RGBA", (2 * reach, 2 * reach), (255, 255, 255, 0))
        _draw_text(layer, (reach, reach), self.text, canvas, size, self.anchor)
        layer = layer.rotate(-self.rotate, resample=Image.Resampling.BICUBIC, center=(reach, reach))
        canvas.image.alpha_composite(layer, (round(x) - reach, round(y) - reach))


def _draw_text(image: Image.Image, at: tuple[float, float], text: str, canvas: _Canvas, size: int,
               anchor: str) -> None:
    """``text`` on its baseline at ``at``, placed by its SVG ``anchor``, in Pillow's bundled font, which
    lacks a few glyphs: "²" is drawn as a raised small 2, and dashes and "×" as their ASCII look-alikes."""
    for fancy, plain in PLAIN_GLYPHS.items():
        text = text.replace(fancy, plain)
    font, small = canvas.font(size), canvas.font(round(0.7 * size))
    first, *rest = text.split("²")
    runs = [(first, False)]  # (text, raised)
    for piece in rest:
        runs += [("2", True), (piece, False)]
    width = sum((small if raised else font).getlength(run) for run, raised in runs)
    x = at[0] - {"start": 0.0, "middle": width / 2, "end": width}[anchor]
    draw = ImageDraw.Draw(image)
    for run, raised in runs:
        face = small if raised else font
        draw.text((x, at[1] - (0.4 * size * canvas.scale if raised else 0)), run, fill="black", font=face,
                  anchor="ls")
        x += face.getlength(run)


@dataclass(frozen=True)
class _Polyline:
    points: tuple[tuple[float, float], ...]
    colour: str
    dash: tuple[float, float] | None = None  # DASHED, DOTTED or None (solid)

    def svg(self) -> str:
        coordinates = " ".join(f"{a:.1f},{b:.1f}" for a, b in self.points)
        dash = f' stroke-dasharray="{self.dash[0]:g} {self.dash[1]:g}"' if self.dash else ""
        return (f'<polyline fill="none" stroke="{self.colour}" stroke-width="1.8"{dash} '
                f'points="{coordinates}"/>')

    def draw(self, canvas: _Canvas) -> None:
        for piece in _dash_pieces(self.points, self.dash):
            canvas.draw.line(canvas.points(piece), self.colour, width=round(1.8 * canvas.scale),
                             joint="curve")


@dataclass(frozen=True)
class _Circle:
    x: float
    y: float
    colour: str
    radius: float = 2.5

    def svg(self) -> str:
        return f'<circle cx="{self.x:.1f}" cy="{self.y:.1f}" r="{self.radius:g}" fill="{self.colour}"/>'

    def draw(self, canvas: _Canvas) -> None:
        (x, y), r = canvas.points([(self.x, self.y)])[0], self.radius * canvas.scale
        canvas.draw.ellipse((x - r, y - r, x + r, y + r), fill=self.colour)


@dataclass(frozen=True)
class _Rect:
    x: float
    y: float
    width: float
    height: float
    colour: str

    def svg(self) -> str:
        return (f'<rect x="{_n(self.x)}" y="{_n(self.y)}" width="{_n(self.width)}" '
                f'height="{_n(self.height)}" fill="{self.colour}"/>')

    def draw(self, canvas: _Canvas) -> None:
        (x0, y0), (x1, y1) = canvas.points([(self.x, self.y), (self.x + self.width, self.y + self.height)])
        canvas.draw.rectangle((x0, y0, x1, y1), fill=self.colour)


@dataclass
class _Canvas:
    """A Pillow image ``scale`` times the chart's size, and the fonts drawn on it."""

    image: Image.Image
    scale: int
    fonts: dict[int, ImageFont.FreeTypeFont | ImageFont.ImageFont] = field(default_factory=dict)

    @property
    def draw(self) -> ImageDraw.ImageDraw:
        return ImageDraw.Draw(self.image)

    def points(self, points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(a * self.scale, b * self.scale) for a, b in points]

    def font(self, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        if size not in self.fonts:
            self.fonts[size] = ImageFont.load_default(size=size * self.scale)
        return self.fonts[size]


_Mark = _Line | _Text | _Polyline | _Circle | _Rect


@dataclass
class Chart:
    """A ``width`` x ``height`` figure whose plot area maps x in [0, x_max] and y in [0, y_max]."""

    title: str
    x_max: float
    y_max: float
    width: int = 640
    height: int = 360
    margins: tuple[int, int, int, int] = (56, 28, 28, 40)  # left, right (the last x tick), top, bottom
    title_size: int = 13
    marks: list[_Mark] = field(default_factory=list)
    axes: dict[str, str] = field(default_factory=dict)  # "x" and "y": each axis's label with its unit
    source_key: ClassVar[str] = PNG_SOURCE_KEY  # the PNG text chunk its ``digest`` travels in

    def __post_init__(self) -> None:
        self.marks.append(_Text(self.left, 16, self.title, size=self.title_size))

    @property
    def left(self) -> float:
        return self.margins[0]

    @property
    def right(self) -> float:
        return self.width - self.margins[1]

    @property
    def bottom(self) -> float:
        return self.height - self.margins[3]

    def x(self, value: float) -> float:
        return self.left + (self.right - self.left) * value / self.x_max

    def y(self, value: float) -> float:
        return self.bottom - (self.bottom - self.margins[2]) * value / self.y_max

    def y_grid(self, values: list[float], axis: str, label: str = "{:.0f}", percent: bool = False) -> None:
        """Grid lines at ``values`` with their tick labels (``percent``: a fraction shown times 100, as
        the tables print it), and the axis's name turned along it at the left edge."""
        for value in values:
            self.marks.append(_Line(self.left, self.y(value), self.right, self.y(value), "#ddd"))
            shown = label.format(100 * value if percent else value)
            self.marks.append(_Text(self.left - 6, self.y(value) + 4, shown, anchor="end"))
        middle = (self.bottom + self.margins[2]) / 2
        self.marks.append(_Text(12, middle, axis, anchor="middle", rotate=-90))
        self.axes["y"] = axis

    def x_labels(self, values: list[float], axis: str) -> None:
        self.marks += [_Text(self.x(value), self.bottom + 16, f"{value:,.0f}", anchor="middle")
                       for value in values]
        self.marks.append(_Text((self.left + self.right) / 2, self.height - 6, axis, anchor="middle"))
        self.axes["x"] = axis

    def x_categories(self, axis: str) -> None:
        """Name the x axis of a chart whose categories are ``slanted`` labels (nothing is drawn: the
        labels are the axis)."""
        self.axes["x"] = axis

    def line(self, points: list[tuple[float, float]], colour: str, dots: bool = False,
             dash: tuple[float, float] | None = None) -> None:
        """A line through ``points`` (data coordinates); ``dash`` (DASHED, DOTTED) tells apart lines
        that may lie on one another."""
        placed = tuple((self.x(a), self.y(b)) for a, b in points)
        self.marks.append(_Polyline(placed, colour, dash))
        if dots:
            self.marks += [_Circle(a, b, colour) for a, b in placed]

    def level(self, value: float, colour: str) -> None:
        """A dashed horizontal line across the plot at ``value``."""
        self.marks.append(_Line(self.left, self.y(value), self.right, self.y(value), colour, dashed=True))

    def bar(self, left: float, width: float, value: float, colour: str) -> None:
        """A bar from 0 to ``value``; ``left`` and ``width`` in pixels."""
        self.marks.append(_Rect(float(left), self.y(value), float(width), self.y(0) - self.y(value), colour))

    def key(self, left: float, top: float, colour: str, text: str, dash: tuple[float, float] | None = None,
            line: bool = False) -> None:
        """A legend entry in pixels: a colour swatch, or with ``line`` a stroke drawn as its line is
        (``dash``), and its text."""
        swatch = _Polyline(((left, top + 5), (left + 18, top + 5)), colour, dash) if line \
            else _Rect(left, top, 10, 10, colour)
        self.marks += [swatch, _Text(left + (22 if line else 14), top + 9, text)]

    def slanted(self, x: float, text: str) -> None:
        """A category label under the plot, slanted; ``x`` in pixels."""
        self.marks.append(_Text(float(x), self.bottom + 14, text, anchor="end", rotate=-30))

    def svg(self) -> str:
        head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" font-family="sans-serif" font-size="{FONT_SIZE}">',
                f"<desc>{self.axes_text()}</desc>", '<rect width="100%" height="100%" fill="white"/>']
        return "\n".join([*head, *(mark.svg() for mark in self.marks), "</svg>"]) + "\n"

    def axes_text(self) -> str:
        """The axes' names, as the SVG's <desc> and the PNG's text chunk hold them."""
        return "; ".join(f"{axis}: {self.axes[axis]}" for axis in ("x", "y") if axis in self.axes)

    def digest(self) -> str:
        """What the chart draws, as one hash: the SHA-256 of its SVG."""
        return hashlib.sha256(self.svg().encode()).hexdigest()

    def png(self, scale: int = 2) -> bytes:
        """The chart drawn ``scale`` times its size, carrying its ``digest`` (``png_source``)."""
        canvas = _Canvas(Image.new("RGBA", (self.width * scale, self.height * scale), "white"), scale)
        for mark in self.marks:
            mark.draw(canvas)
        info = PngImagePlugin.PngInfo()
        info.add_text(PNG_SOURCE_KEY, self.digest())
        info.add_text(PNG_AXES_KEY, self.axes_text())
        out = io.BytesIO()
        canvas.image.convert("RGB").save(out, format="PNG", pnginfo=info)
        return out.getvalue()


def figure_axes(path: Path) -> dict[str, str]:
    """The axes a chart figure names (an SVG's <desc>, a PNG's text chunk): {"x": ..., "y": ...}."""
    if path.suffix == ".svg":
        text = path.read_text()
        start = text.find("<desc>")
        held = text[start + len("<desc>"):text.find("</desc>")] if start >= 0 else ""
    else:
        with Image.open(path) as image:
            held = image.text.get(PNG_AXES_KEY, "") if isinstance(image, PngImagePlugin.PngImageFile) else ""
    return dict(part.split(": ", 1) for part in held.split("; ") if ": " in part)


def png_source(path: Path, key: str = PNG_SOURCE_KEY) -> str | None:
    """The digest a PNG carries of what it was drawn from (a chart's: ``Chart.png``; another figure's
    under its own ``key``); None for a PNG without one."""
    with Image.open(path) as image:
        return image.text.get(key) if isinstance(image, PngImagePlugin.PngImageFile) else None

