"""ident3d: the 3DIdent family of identifiability benchmarks.

Importing this package stays light (numpy and scipy); torch-based parts live in submodules such
as ``ident3d.datasets`` and ``ident3d.evaluation``. It never imports ``render``, ``baselines`` or
``leaderboard``.
"""

from importlib.metadata import PackageNotFoundError, version

from ident3d.latents import FACTOR_NAMES, FACTORS, sample_conditional, sample_uniform
from ident3d.scene import SceneParams, scene_params

try:
    __version__ = version("ident3d")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["FACTORS", "FACTOR_NAMES", "SceneParams", "__version__", "sample_conditional",
           "sample_uniform", "scene_params"]
