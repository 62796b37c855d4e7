"""From raw latents to scene parameters: positions, Euler angles, spotlight position and RGB colours.

Pure numpy, so the whole mapping is tested without Blender; ``render`` only applies the result.
Which latent drives which quantity, and how, is a variant's spec (``ident3d.variants``).
Geometry and colour constants follow Zimmermann et al. (ICML 2021), appendix A.4, and the
measurements in docs/facts.md ("Latents").

Two mappings share factor order, ranges and geometry and differ only in colour:

* ``legacy`` reproduces the original generator: hue ``h = u / 4`` is fed to ``colorsys``-style HSV
  conversion without wrapping, and Blender clamps the resulting negative channels to 0. Object hue
  is pure red for every ``u`` in [-2/3, 0] and jumps at ``u = -2/3``; spotlight and ground hues have
  smaller plateaus. Use it only to match the published images.
* ``v2`` wraps the same hue arc onto the colour circle: ``h = (u / 4) mod 1`` runs from 270 degrees
  (violet) through 0 (red) to 90 degrees (chartreuse), half the circle, so both ends are clearly
  different colours. Every channel stays inside [0, 1] without clamping, and each hue latent maps
  continuously and injectively to RGB.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from ident3d.errors import LatentError

TEAPOT_SIZE = 4.4421  # largest dimension of the scaled teapot, "s" in docs/facts.md
SPOT_RADIUS = 4.0
SPOT_HEIGHT = 6.0 + TEAPOT_SIZE
GROUND_Z = -TEAPOT_SIZE
# HSV saturations of object, spotlight and ground colour (value is always 1).
SATURATIONS = (1.0, 0.8, 0.6)


@dataclass(frozen=True)
class SceneParams:
    """Everything Blender needs per image: (N, 3) float64 arrays and the shape names."""

    object_location: np.ndarray
    object_rotation: np.ndarray  # Euler XYZ, radians
    spot_location: np.ndarray  # the spot always aims at the object's origin
    object_rgb: np.ndarray  # linear RGB as given to Blender
    spot_rgb: np.ndarray
    ground_rgb: np.ndarray
    object_shape: np.ndarray  # (N,) shape names (ident3d.scene.SHAPES)

    def __len__(self) -> int:
        return len(self.object_location)

    def row(self, i: int) -> dict[str, tuple[float, float, float] | str]:
        """The parameters of image ``i`` as plain values (what a render worker consumes)."""
        row: dict[str, tuple[float, float, float] | str] = {
            f.name: tuple(float(v) for v in getattr(self, f.name)[i]) for f in fields(self)
            if f.name != "object_shape"}
        row["object_shape"] = str(self.object_shape[i])
        return row


def hsv_to_rgb(h: np.ndarray, s: float, v: float = 1.0) -> np.ndarray:
    """Continuous HSV to RGB with the hue taken modulo 1; channels always in [0, v]."""
    h = np.mod(np.asarray(h, dtype=np.float64), 1.0)
    k = np.mod(np.array([5.0, 3.0, 1.0]) + 6.0 * h[..., None], 6.0)
    return v * (1.0 - s * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0))


def colorsys_hsv_to_rgb_clamped(h: np.ndarray, s: float, v: float = 1.0) -> np.ndarray:
    """The original pipeline's colour: ``colorsys.hsv_to_rgb`` on unwrapped hues, then Blender's clamp.

    ``colorsys`` truncates ``6 h`` toward zero, so negative hues give channels below 0 (which
    Blender clamps to 0) and above 1 (which pass through as HDR values).
    """
    h6 = 6.0 * np.asarray(h, dtype=np.float64)
    sector = np.trunc(h6)
    f = h6 - sector
    sector = np.mod(sector, 6).astype(int)
    p = np.full_like(f, v * (1.0 - s))
    q = v * (1.0 - s * f)
    t = v * (1.0 - s * (1.0 - f))
    vv = np.full_like(f, v)
    table = np.stack([
        np.stack([vv, t, p], -1), np.stack([q, vv, p], -1), np.stack([p, vv, t], -1),
        np.stack([p, q, vv], -1), np.stack([t, p, vv], -1), np.stack([vv, p, q], -1),
    ])
    rgb = np.take_along_axis(table, sector[None, ..., None].repeat(3, -1), 0)[0]
    return np.maximum(rgb, 0.0)


@dataclass(frozen=True)
class Mapping:
    """A named, versioned way to turn hue latents into colours; geometry is shared."""

    name: str
    summary: str
    hue_to_rgb: Callable[[np.ndarray, float], np.ndarray]
    hue_formula: str
    wraps_hue: bool


MAPPINGS: dict[str, Mapping] = {
    "v2": Mapping(
        "v2",
        "identifiable colours: hue arc 270..360..90 degrees wrapped onto the colour circle, "
        "no clamping",
        hsv_to_rgb,
        "HSV(h = (u/4) mod 1, S={s}, V=1): hue 270 (violet) -> 0 (red) -> 90 (chartreuse) deg",
        wraps_hue=True,
    ),
    "legacy": Mapping(
        "legacy",
        "the original 3DIdent colours, clamping defect included (matches the published images)",
        colorsys_hsv_to_rgb_clamped,
        "colorsys HSV(h = u/4, S={s}, V=1), negative channels clamped to 0 (not injective)",
        wraps_hue=False,
    ),
}


def get_mapping(name: str) -> Mapping:
    if name not in MAPPINGS:
        raise LatentError(
            f"unknown scene mapping {name!r}; expected one of {', '.join(MAPPINGS)}. "
            "Fix: use 'v2' for new renders or 'legacy' to match the published 3DIdent."
        )
    return MAPPINGS[name]


@dataclass(frozen=True)
class SceneQuantity:
    """Something a latent can drive (``drives`` in a variant spec), with its value when none does."""

    label: str
    unit: str
    symbol: str
    default: float
    saturation: float = 1.0  # hues only: the HSV saturation of that colour
    note: str = ""


QUANTITIES: dict[str, SceneQuantity] = {
    "object_x": SceneQuantity("object location x", "scene units", "x", 0.0),
    "object_y": SceneQuantity("object location y", "scene units", "y", 0.0),
    "object_z": SceneQuantity("object location z", "scene units", "z", TEAPOT_SIZE / 2),
    "rotation_alpha": SceneQuantity("Euler X (mode XYZ)", "rad", "alpha", 0.0),
    "rotation_beta": SceneQuantity("Euler Y (mode XYZ)", "rad", "beta", 0.0),
    "rotation_gamma": SceneQuantity("Euler Z (mode XYZ)", "rad", "gamma", 0.0),
    "spotlight_angle": SceneQuantity("spotlight position angle theta", "rad", "theta", 0.0,
                                     note=f"spot at (4 sin theta, 4 cos theta, {SPOT_HEIGHT:.4f})"),
    "object_hue": SceneQuantity("object colour hue", "turns", "h", 0.0, SATURATIONS[0]),
    "spotlight_hue": SceneQuantity("spotlight colour hue", "turns", "h", 0.0, SATURATIONS[1]),
    "ground_hue": SceneQuantity("ground colour hue", "turns", "h", 0.0, SATURATIONS[2]),
    "object_class": SceneQuantity("object shape", "class", "c", 0.0),
}
# Object shapes a class latent can select: the teapot and meshes that need no download
# (render/shapes.py builds them, each normalised to the teapot's size).
SHAPES = ("teapot", "monkey", "torus", "cone", "cylinder", "cube", "sphere", "icosphere")


def params_from_quantities(values: dict[str, np.ndarray], n: int, colour: Mapping,
                           shape: np.ndarray | None = None) -> SceneParams:
    """Scene parameters of ``n`` images from scene quantities (hues in turns); a quantity missing
    from ``values`` takes its default, a missing ``shape`` is the teapot."""
    def q(name: str) -> np.ndarray:
        if name in values:
            return np.asarray(values[name], np.float64)
        return np.full(n, QUANTITIES[name].default)

    theta = q("spotlight_angle")
    spot = np.stack([SPOT_RADIUS * np.sin(theta), SPOT_RADIUS * np.cos(theta),
                     np.full_like(theta, SPOT_HEIGHT)], axis=1)
    return SceneParams(
        object_location=np.stack([q("object_x"), q("object_y"), q("object_z")], axis=1),
        object_rotation=np.stack([q("rotation_alpha"), q("rotation_beta"), q("rotation_gamma")], axis=1),
        spot_location=spot,
        object_rgb=colour.hue_to_rgb(q("object_hue"), QUANTITIES["object_hue"].saturation),
        spot_rgb=colour.hue_to_rgb(q("spotlight_hue"), QUANTITIES["spotlight_hue"].saturation),
        ground_rgb=colour.hue_to_rgb(q("ground_hue"), QUANTITIES["ground_hue"].saturation),
        object_shape=np.full(n, "teapot", dtype=object) if shape is None else np.asarray(shape, object),
    )
