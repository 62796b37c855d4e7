"""ident3d: the 3DIdent family of identifiability benchmarks.

Importing this package stays light (numpy and scipy); torch-based parts live in submodules such
as ``ident3d.datasets`` and ``ident3d.evaluation``. It never imports ``render``, ``baselines`` or
``leaderboard``.
"""

from importlib.metadata import PackageNotFoundError, version

from ident3d.latents import sample_conditional, sample_uniform
from ident3d.scene import SceneParams
from ident3d.variants import FACTOR_NAMES, FACTORS, Variant, get_variant, scene_params

try:
    __version__ = version("ident3d")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

# Heavy parts (torch, torchvision, FAISS) load on first use: `from ident3d import ThreeDIdent`.
LAZY = {"ThreeDIdent": "ident3d.datasets", "ContrastivePairs": "ident3d.pairs",
        "RenderedPairs": "ident3d.pairs", "PairLoader": "ident3d.batching",
        "evaluate": "ident3d.evaluation", "get_track": "ident3d.tracks"}

__all__ = ["FACTORS", "FACTOR_NAMES", "ContrastivePairs", "PairLoader", "RenderedPairs", "SceneParams",
           "ThreeDIdent", "Variant", "__version__", "evaluate", "get_track", "get_variant",
           "sample_conditional", "sample_uniform", "scene_params"]


def __getattr__(name: str):
    if name in LAZY:
        import importlib

        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module 'ident3d' has no attribute {name!r}")
