"""Small standalone SVG charts for the figures in docs/ (no plotting dependency): a white frame with a
title, a y grid, and lines, bars, legend keys and labels placed in data coordinates.

The figures are generated files with staleness tests, so the output is plain, deterministic text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

# ten distinguishable colours (Tableau 10)
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")


def ticks(top: float, count: int = 6) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) from 0 up to ``top``."""
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [step * i for i in range(int(top // step) + 1)]


@dataclass
class Chart:
    """An SVG of ``width`` x ``height`` whose plot area maps x in [0, x_max] and y in [0, y_max]."""

    title: str
    x_max: float
    y_max: float
    width: int = 640
    height: int = 360
    margins: tuple[int, int, int, int] = (56, 16, 28, 40)  # left, right, top, bottom
    title_size: int = 13
    parts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        left = self.margins[0]
        self.parts += [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                       f'viewBox="0 0 {self.width} {self.height}" font-family="sans-serif" font-size="11">',
                       '<rect width="100%" height="100%" fill="white"/>',
                       f'<text x="{left}" y="16" font-size="{self.title_size}">{self.title}</text>']

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

    def y_grid(self, values: list[float], label: str = "{:.0f}") -> None:
        for value in values:
            self.parts.append(f'<line x1="{self.left}" x2="{self.right}" y1="{self.y(value):.1f}" '
                              f'y2="{self.y(value):.1f}" stroke="#ddd"/>')
            self.parts.append(f'<text x="{self.left - 6}" y="{self.y(value) + 4:.1f}" text-anchor="end">'
                              f'{label.format(value)}</text>')

    def x_labels(self, values: list[float], axis: str = "") -> None:
        for value in values:
            self.parts.append(f'<text x="{self.x(value):.1f}" y="{self.bottom + 16}" text-anchor="middle">'
                              f'{value:,.0f}</text>')
        if axis:
            self.parts.append(f'<text x="{(self.left + self.right) / 2}" y="{self.height - 6}" '
                              f'text-anchor="middle">{axis}</text>')

    def line(self, points: list[tuple[float, float]], colour: str, dots: bool = False) -> None:
        coordinates = " ".join(f"{self.x(a):.1f},{self.y(b):.1f}" for a, b in points)
        self.parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.8" '
                          f'points="{coordinates}"/>')
        if dots:
            self.parts += [f'<circle cx="{self.x(a):.1f}" cy="{self.y(b):.1f}" r="2.5" fill="{colour}"/>'
                           for a, b in points]

    def level(self, value: float, colour: str) -> None:
        """A dashed horizontal line across the plot at ``value``."""
        self.parts.append(f'<line x1="{self.left}" x2="{self.right}" y1="{self.y(value):.1f}" '
                          f'y2="{self.y(value):.1f}" stroke="{colour}" stroke-dasharray="5 4"/>')

    def bar(self, left: float, width: float, value: float, colour: str) -> None:
        """A bar from 0 to ``value``; ``left`` and ``width`` in pixels."""
        self.parts.append(f'<rect x="{left:.1f}" y="{self.y(value):.1f}" width="{width:.1f}" '
                          f'height="{self.y(0) - self.y(value):.1f}" fill="{colour}"/>')

    def key(self, left: float, top: float, colour: str, text: str) -> None:
        """A legend entry: a colour swatch and its text, in pixels."""
        self.parts.append(f'<rect x="{left}" y="{top}" width="10" height="10" fill="{colour}"/>')
        self.parts.append(f'<text x="{left + 14}" y="{top + 9}">{text}</text>')

    def slanted(self, x: float, text: str) -> None:
        """A category label under the plot, slanted; ``x`` in pixels."""
        self.parts.append(f'<text x="{x:.1f}" y="{self.bottom + 14}" text-anchor="end" '
                          f'transform="rotate(-30 {x:.1f} {self.bottom + 14})">{text}</text>')

    def svg(self) -> str:
        return "\n".join([*self.parts, "</svg>"]) + "\n"


def write_figures(folder: Path, made: dict[str, str]) -> None:
    """Make ``folder`` hold exactly the SVGs ``made`` (file name -> SVG): stale ones go."""
    folder.mkdir(exist_ok=True)
    for stale in folder.glob("*.svg"):
        if stale.name not in made:
            stale.unlink()
    for name, svg in made.items():
        (folder / name).write_text(svg)
