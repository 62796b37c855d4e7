"""Templated text descriptions of images, from their scene parameters (as Multimodal3DIdent offers).

A caption carries the object's shape and colour, its coarse place (front/back, left/right) and
height, the spotlight's direction (front, side or behind) and colour, and the ground's colour. It carries
no rotation and only coarse positions, so text and image share some latents and not others
(docs/variants.md). Colour names come from the hue of the RGB actually rendered, so ``legacy``'s
clamped colours are named as they look.
"""

from __future__ import annotations

import colorsys

import numpy as np

from ident3d.scene import SceneParams

# Twelve hue names, one per 30 degrees, centred on their hue (red at 0).
HUE_NAMES = ("red", "orange", "yellow", "chartreuse", "green", "spring green", "cyan", "azure", "blue",
             "violet", "magenta", "rose")
THIRD = 1.0  # scene units: |x| or |y| beyond this leaves the middle of the floor
HIGH = 4.0  # scene units: a height above this is "high above the ground"
LOW = 1.0  # below this the object touches or sinks into the ground


def colour_name(rgb: tuple[float, float, float] | np.ndarray) -> str:
    """The hue name of a colour; greys (equal channels) are "grey"."""
    r, g, b = (float(np.clip(c, 0.0, 1.0)) for c in rgb)
    hue, _, value = colorsys.rgb_to_hsv(r, g, b)
    if max(r, g, b) - min(r, g, b) < 1e-6:
        return "grey" if value > 0 else "black"
    return HUE_NAMES[int(round(hue * 12)) % 12]


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _place(x: float, y: float) -> str:
    depth = "front" if x > THIRD else "back" if x < -THIRD else "middle"
    side = "right" if y > THIRD else "left" if y < -THIRD else "centre"
    if depth == "middle" and side == "centre":
        return "in the centre"
    if depth == "middle":
        return f"on the {side}"
    if side == "centre":
        return f"at the {depth}"
    return f"at the {depth} {side}"


def caption(params: SceneParams, i: int) -> str:
    """One sentence about image ``i``."""
    x, y, z = params.object_location[i]
    height = ("high above the ground" if z > HIGH else "resting low" if z < LOW else "above the ground")
    spot_x = params.spot_location[i][0]
    light = "from the front" if spot_x > THIRD else "from behind" if spot_x < -THIRD else "from the side"
    shape = str(params.object_shape[i])
    p = params
    obj, spot, ground = (colour_name(rgb[i]) for rgb in (p.object_rgb, p.spot_rgb, p.ground_rgb))
    sentence = (f"{_a(obj)} {shape} {_place(x, y)}, {height}, lit {light} by {_a(spot)} spotlight, on "
                f"{_a(ground)} ground.")
    return sentence[0].upper() + sentence[1:]


def captions(params: SceneParams) -> list[str]:
    return [caption(params, i) for i in range(len(params))]
