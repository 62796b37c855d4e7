"""From raw latents to scene parameters: positions, Euler angles, spotlight position and RGB colours.

Pure numpy, so the whole mapping is tested without Blender; ``render`` only applies the result.
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
from ident3d.latents import check_raw_latents

TEAPOT_SIZE = 4.4421  # largest dimension of the scaled teapot, "s" in docs/facts.md
POSITION_SCALE = 3.0  # location = 3 u
ANGLE_SCALE = np.pi / 2  # rotations and spotlight angle = (pi / 2) u
HUE_SCALE = 1 / 4  # hue in turns = (pi / 2) u / (2 pi)
SPOT_RADIUS = 4.0
SPOT_HEIGHT = 6.0 + TEAPOT_SIZE
GROUND_Z = -TEAPOT_SIZE
# HSV saturations of object, spotlight and ground colour (value is always 1).
SATURATIONS = (1.0, 0.8, 0.6)


@dataclass(frozen=True)
class SceneParams:
    """Everything Blender needs per image; every field is an (N, 3) float64 array."""

    object_location: np.ndarray
    object_rotation: np.ndarray  # Euler XYZ, radians
    spot_location: np.ndarray  # the spot always aims at the object's origin
    object_rgb: np.ndarray  # linear RGB as given to Blender
    spot_rgb: np.ndarray
    ground_rgb: np.ndarray

    def __len__(self) -> int:
        return len(self.object_location)

    def row(self, i: int) -> dict[str, tuple[float, float, float]]:
        """The parameters of image ``i`` as plain tuples (what a render worker consumes)."""
        return {f.name: tuple(float(v) for v in getattr(self, f.name)[i]) for f in fields(self)}


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
DEFAULT_MAPPING = "v2"


def get_mapping(name: str) -> Mapping:
    if name not in MAPPINGS:
        raise LatentError(
            f"unknown scene mapping {name!r}; expected one of {', '.join(MAPPINGS)}. "
            "Fix: use 'v2' for new renders or 'legacy' to match the published 3DIdent."
        )
    return MAPPINGS[name]


# Per factor: the scene quantity is SCALE * u + OFFSET (then, for the hues, the mapping's colour).
# One table serves the renderer (scene_params), the latents file (scene_latents) and the card.
SCENE_AFFINE: tuple[tuple[str, float, float, str], ...] = (  # symbol, scale, offset, printed scale
    ("x", POSITION_SCALE, 0.0, "3"),
    ("y", POSITION_SCALE, 0.0, "3"),
    ("z", POSITION_SCALE, TEAPOT_SIZE / 2, "3"),
    ("alpha", ANGLE_SCALE, 0.0, "(pi/2)"),
    ("beta", ANGLE_SCALE, 0.0, "(pi/2)"),
    ("gamma", ANGLE_SCALE, 0.0, "(pi/2)"),
    ("theta", ANGLE_SCALE, 0.0, "(pi/2)"),
    ("h", HUE_SCALE, 0.0, "1/4"),
    ("h", HUE_SCALE, 0.0, "1/4"),
    ("h", HUE_SCALE, 0.0, "1/4"),
)
HUES = slice(7, 10)


def _scene_values(raw: np.ndarray, m: Mapping) -> np.ndarray:
    """(N, 10) float64 scene quantities; hues in turns, wrapped when the mapping wraps them."""
    z = check_raw_latents(raw)
    scale = np.array([row[1] for row in SCENE_AFFINE])
    offset = np.array([row[2] for row in SCENE_AFFINE])
    out = z * scale + offset
    if m.wraps_hue:
        out[:, HUES] = np.mod(out[:, HUES], 1.0)
    return out


def scene_params(raw: np.ndarray, mapping: str = DEFAULT_MAPPING) -> SceneParams:
    """Map raw latents (N, 10) in [-1, 1] to scene parameters with the named mapping."""
    m = get_mapping(mapping)
    v = _scene_values(raw, m)
    theta = v[:, 6]
    spot = np.stack([SPOT_RADIUS * np.sin(theta), SPOT_RADIUS * np.cos(theta),
                     np.full_like(theta, SPOT_HEIGHT)], axis=1)
    return SceneParams(
        object_location=v[:, 0:3].copy(),
        object_rotation=v[:, 3:6].copy(),
        spot_location=spot,
        object_rgb=m.hue_to_rgb(v[:, 7], SATURATIONS[0]),
        spot_rgb=m.hue_to_rgb(v[:, 8], SATURATIONS[1]),
        ground_rgb=m.hue_to_rgb(v[:, 9], SATURATIONS[2]),
    )


def scene_latents(raw: np.ndarray, mapping: str = DEFAULT_MAPPING) -> np.ndarray:
    """Scene-space values per factor, as stored in ``latents.npy`` (N, 10), float32.

    Columns: location x, y, z (scene units), Euler X, Y, Z (rad), spotlight angle (rad), then the
    three hues in turns (wrapped to [0, 1) for ``v2``, unwrapped as in the original for ``legacy``).
    """
    return _scene_values(raw, get_mapping(mapping)).astype(np.float32)


def factor_formulas(mapping: str = DEFAULT_MAPPING) -> tuple[str, ...]:
    """Human-readable formula from raw latent u to the scene, per factor (for the dataset card)."""
    m = get_mapping(mapping)
    out = []
    for k, (symbol, _, offset, printed) in enumerate(SCENE_AFFINE):
        if k in range(HUES.start, HUES.stop):
            out.append(m.hue_formula.format(s=SATURATIONS[k - HUES.start]))
            continue
        text = f"{symbol} = {printed}u" + (f" + {offset:.4f}" if offset else "")
        if symbol == "theta":
            text += f"; spot at (4 sin theta, 4 cos theta, {SPOT_HEIGHT:.4f})"
        out.append(text)
    return tuple(out)
