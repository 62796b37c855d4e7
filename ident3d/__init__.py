"""ident3d: the 3DIdent family of identifiability benchmarks.

Importing this package loads nothing else: every name below is imported on first use (the
sandbox process that runs submitted models starts faster for it). It never imports
``ident3d.render``, ``ident3d.baselines`` or ``ident3d.leaderboard``.

Those three rooms live beside ``ident3d/`` in the repository and are reached through the symbolic
links ``ident3d/render``, ``ident3d/baselines`` and ``ident3d/leaderboard``; the wheel stores their
files under ``ident3d/``. Either way this package's search path is its own folder only, so there is
one copy of every module (``ident3d.ident3d`` does not exist).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ident3d")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

# Every part loads on first use: `from ident3d import ThreeDIdent` imports torch, FAISS and so on.
LAZY = {"ThreeDIdent": "ident3d.datasets", "ContrastivePairs": "ident3d.pairs",
        "RenderedPairs": "ident3d.pairs", "PairLoader": "ident3d.pairs",
        "evaluate": "ident3d.evaluation", "get_track": "ident3d.tracks",
        "sample_conditional": "ident3d.latents", "SceneParams": "ident3d.scene",
        "Variant": "ident3d.variants", "get_variant": "ident3d.variants",
        "scene_params": "ident3d.variants"}

__all__ = ["ContrastivePairs", "PairLoader", "RenderedPairs", "SceneParams",
           "ThreeDIdent", "Variant", "__version__", "evaluate", "get_track", "get_variant",
           "sample_conditional", "scene_params"]


def __getattr__(name: str):
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module 'ident3d' has no attribute {name!r}")
