"""From a variant's raw latents to the scene: scene quantities (``scale * u + offset``, hues in turns),
the parameters the renderer reads, and the formulas the dataset card prints (``Variant.scene_values``,
``scene_params``, ``scene_latents`` and ``formulas`` call these)."""

from __future__ import annotations

import numpy as np

from ident3d.scene import QUANTITIES, SceneParams, get_mapping, params_from_quantities
from ident3d.variants.model import Factor, Variant


def scene_values(variant: Variant, raw: np.ndarray) -> np.ndarray:
    """(N, k) float64 scene quantities: ``scale * u + offset``, hues in turns (wrapped when the
    colour mapping wraps them), class indices as they are."""
    z = variant.check_raw(raw)
    scale = np.array([1.0 if f.is_class else f.scale for f in variant.factors])
    offset = np.array([0.0 if f.is_class else f.offset for f in variant.factors])
    out = z * scale + offset
    if get_mapping(variant.colour).wraps_hue:
        hues = [f.index for f in variant.factors if QUANTITIES[f.drives].unit == "turns"]
        out[:, hues] = np.mod(out[:, hues], 1.0)
    return out

def scene_params(variant: Variant, raw: np.ndarray) -> SceneParams:
    values = scene_values(variant, raw)
    by_quantity = {f.drives: values[:, f.index] for f in variant.factors if not f.is_class}
    shape = None
    for f in variant.factors:
        if f.is_class:
            shape = np.array(f.classes, dtype=object)[values[:, f.index].astype(int)]
    return params_from_quantities(by_quantity, len(values), get_mapping(variant.colour), shape)

def scene_latents(variant: Variant, raw: np.ndarray) -> np.ndarray:
    """What ``latents.npy`` stores: the scene values (float32)."""
    return scene_values(variant, raw).astype(np.float32)

def formulas(variant: Variant) -> tuple[str, ...]:
    """Human-readable mapping from raw latent u to the scene, per factor (for the card)."""
    m = get_mapping(variant.colour)
    out = []
    for f in variant.factors:
        q = QUANTITIES[f.drives]
        if f.is_class:
            text = f"class index -> shape: {', '.join(f'{i} {c}' for i, c in enumerate(f.classes))}"
        elif q.unit == "turns":
            text = m.hue_formula.format(s=q.saturation).replace("u/4", _affine_text("u", f))
        else:
            text = f"{q.symbol} = {_affine_text('u', f)}" + (f"; {q.note}" if q.note else "")
        out.append(text)
    return tuple(out)


def _affine_text(u: str, f: Factor) -> str:
    scale = f.scale_text if f.scale_text.replace(".", "").isdigit() else f"({f.scale_text})"
    text = f"{scale}{u}" if f.scale_text != "1/4" else f"{u}/4"
    return text + (f" + {f.offset:.4f}" if f.offset else "")
