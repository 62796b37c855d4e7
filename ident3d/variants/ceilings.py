"""How much of each latent the renderer receives: the R² ceiling a variant's scene mapping puts on any
read-out.

A mapping that sends a stretch of a latent's range to one scene (the ``legacy`` hues: one colour on
a plateau) hides where on that stretch the latent was; no image encoder can tell. The best any
read-out can do there is the stretch's mean, so its R² is at most

    1 - E[Var(u | scene(u))] / Var(u)

with u uniform on [-1, 1]. For a plateau of length L this is 1 - L³ / 8 (the object hue of
``legacy``, flat on [-2/3, 0]: 0.963); an injective mapping gives 1.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from ident3d.variants.model import Variant


def readout_ceilings(variant: Variant, n: int = 200_001, decimals: int = 9) -> dict[str, float]:
    """Per latent, varied alone on ``n`` evenly spaced values of [-1, 1] (the others at 0): the R²
    ceiling of reading it from the scene parameters the renderer receives (equal when they agree to
    ``decimals`` places)."""
    u = np.linspace(-1.0, 1.0, n)
    ceilings = {}
    for column, name in enumerate(variant.names):
        raw = np.zeros((n, len(variant.names)))
        raw[:, column] = u
        params = variant.scene_params(raw)
        scene = np.concatenate([np.asarray(getattr(params, f.name), dtype=np.float64).reshape(n, -1)
                                for f in fields(params) if f.name != "object_shape"], axis=1)
        rows = np.ascontiguousarray(np.round(scene, decimals) + 0.0)  # + 0.0: -0.0 and 0.0 agree
        _, group = np.unique(rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel(),
                             return_inverse=True)
        counts = np.bincount(group)
        means = np.bincount(group, weights=u) / counts
        within = np.sum((u - means[group]) ** 2)  # what no read-out can explain
        ceilings[name] = float(1.0 - within / np.sum((u - u.mean()) ** 2))
    return ceilings
