"""Which benchmark a test split is: a named track when it provably is one, else custom data.

A split counts as ``3dident-published`` only when ``ident3d download`` fetched it from the pinned
Zenodo record and its latents are still the downloaded file; a split without a manifest is not
enough. Every other split is ``custom:<hash>``, a hash of its latents, variant and render settings,
so results on equal data share a key and results on different data never do.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from ident3d.atomic import sha256_array
from ident3d.layout import SplitLayout

PUBLISHED = "3dident-published"


def custom_key(latents: np.ndarray, manifest: dict[str, Any] | None) -> str:
    """``custom:`` and 12 hex digits of the latents, variant and pixel settings."""
    settings = dict((manifest or {}).get("render_settings") or {})
    settings.pop("device", None)
    identity = {"latents": sha256_array(np.ascontiguousarray(latents, dtype=np.float32)),
                "variant": (manifest or {}).get("variant"), "settings": settings}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return f"custom:{digest[:12]}"


def identify(layout: SplitLayout, latents: np.ndarray, manifest: dict[str, Any] | None) -> str:
    """The track a split verifiably is, else its custom key."""
    from ident3d.download import published_split

    if published_split(layout):
        return PUBLISHED
    return custom_key(latents, manifest)
