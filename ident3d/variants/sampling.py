"""Drawing a variant's raw latents: roots uniform, classes equally likely, children from their
mechanisms in causal order; exact positive pairs and content/style pairs (``Variant.sample`` and
``Variant.sample_pairs`` call these)."""

from __future__ import annotations

import graphlib

import numpy as np

from ident3d.errors import LatentError
from ident3d.latents import (
    PAIR_STREAM,
    RAW_HIGH,
    RAW_LOW,
    broadcast_scale,
    conditional_from_uniform,
    sample_conditional,
)
from ident3d.variants.model import Factor, Variant, VariantError

STYLE_STREAM = 3  # second key of the style latents' stream in content/style pairs


def sample(variant: Variant, n: int, seed: int | list[int]) -> np.ndarray:
    """``n`` raw latent vectors (float32): roots uniform (classes equally likely), children from
    their mechanisms in causal order. One uniform draw per value, so a variant without classes
    or mechanisms gives exactly ``sample_uniform(n, seed)``."""
    if n < 0:
        raise LatentError(f"number of samples must be >= 0, got {n}")
    u = np.random.default_rng(seed).uniform(RAW_LOW, RAW_HIGH, size=(n, variant.n_latents))
    u = u.astype(np.float32).astype(np.float64)
    z = u.copy()
    for f in variant.factors:
        if f.is_class:
            k = len(f.classes)
            z[:, f.index] = np.minimum(np.floor((u[:, f.index] + 1) / 2 * k), k - 1)
    for f in _causal_order(variant):
        mean = _mechanism_mean(variant, f, z)
        z[:, f.index] = conditional_from_uniform(mean, (u[:, f.index] + 1) / 2, "normal",
                                                 f.mechanism.noise)
    return z.astype(np.float32)

def _causal_order(variant: Variant) -> list[Factor]:
    by_name = {f.name: f for f in variant.factors}
    graph = {f.name: set(f.mechanism.parents) if f.mechanism else set() for f in variant.factors}
    return [by_name[name] for name in graphlib.TopologicalSorter(graph).static_order()
            if by_name[name].mechanism]

def _mechanism_mean(variant: Variant, f: Factor, z: np.ndarray) -> np.ndarray:
    index = {g.name: g.index for g in variant.factors}
    m = f.mechanism
    mean = np.full(len(z), m.bias)
    for parent, weight in m.weights.items():
        mean += weight * z[:, index[parent]]
    for parent, means in m.means.items():
        mean += np.asarray(means)[z[:, index[parent]].astype(int)]
    return mean

def sample_pairs(variant: Variant, n: int, seed: int, kind: str = "normal",
                 scale: float | np.ndarray = 0.1, beta: float | None = None,
                 style: tuple[str, ...] | list[str] = ()) -> np.ndarray:
    """``n`` exact positive pairs as ``(2n, k)`` rows: anchor ``i`` at row ``2i`` (``sample(n, seed)``),
    its positive at ``2i + 1``: continuous latents from the truncated conditional around the
    anchor, class latents kept (the object is content).

    With ``style`` names, a content/style pair instead (von Kügelgen et al., NeurIPS 2021): the
    style latents are drawn afresh from their marginal (``sample`` with its own stream), every
    other latent is shared exactly."""
    anchors = sample(variant, n, seed)
    positives = anchors.astype(np.float64)
    if style:
        unknown = [name for name in style if name not in variant.names]
        if unknown or len(set(style)) == variant.n_latents:
            raise VariantError(f"style latents {unknown or list(style)}: expected some, not all, of "
                               f"{', '.join(variant.names)}")
        columns = [variant.names.index(name) for name in style]
        positives[:, columns] = sample(variant, n, [seed, STYLE_STREAM])[:, columns]
    else:
        scale = broadcast_scale(scale, variant.n_latents)
        cont = variant.continuous_columns
        rng = np.random.default_rng([seed, PAIR_STREAM])
        positives[:, cont] = sample_conditional(anchors[:, cont], rng, kind, scale[cont], beta)
    rows = np.empty((2 * n, variant.n_latents), dtype=np.float32)
    rows[0::2], rows[1::2] = anchors, positives
    return rows
