"""Variants as data: a TOML spec lists the latents, what each drives in the scene, and optionally object
classes and a causal model among the latents (docs/variants.md).

A continuous latent u is uniform on [-1, 1] unless it has a mechanism, and drives its scene quantity
as ``scale * u + offset``. A class latent stores the class index (0, 1, ...) as its raw value and
selects the object shape. A mechanism makes a latent a child in a DAG: its raw value is drawn from
a normal around ``bias + sum(weights[p] * u_p) + means[c][class of c]``, truncated to [-1, 1]
(additive noise, exact truncation through the inverse CDF). ``v2`` and ``legacy`` are frozen: the
benchmark tracks rest on them, so their files never change; a new scene is a new file.
"""

from __future__ import annotations

import numpy as np

from ident3d.scene import SceneParams
from ident3d.variants.model import Factor, Mechanism, Variant, VariantError
from ident3d.variants.sampling import STYLE_STREAM
from ident3d.variants.spec import (
    DEFAULT_VARIANT,
    FROZEN,
    builtin_names,
    get_variant,
    manifest_fields,
    parse_scale,
    split_variant,
    variant_from_dict,
)

__all__ = ["DEFAULT_VARIANT", "FROZEN", "STYLE_STREAM", "Factor", "Mechanism",
           "Variant", "VariantError", "builtin_names", "get_variant", "manifest_fields", "parse_scale",
           "scene_latents", "scene_params", "split_variant", "variant_from_dict"]


def scene_params(raw: np.ndarray, variant: str | Variant = DEFAULT_VARIANT) -> SceneParams:
    """Map raw latents to scene parameters with the named (or given) variant."""
    return get_variant(variant).scene_params(raw)


def scene_latents(raw: np.ndarray, variant: str | Variant = DEFAULT_VARIANT) -> np.ndarray:
    return get_variant(variant).scene_latents(raw)
