"""Import optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRA_OF_MODULE = {
    "bpy": "render",
    "faiss": "faiss",
    "ray": "distributed",
    "zenodo_get": "zenodo",
}


def require(module: str) -> ModuleType:
    """Import ``module`` or raise ImportError naming the ``pip install "ident3d[extra]"`` to run."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        extra = EXTRA_OF_MODULE.get(module.split(".")[0])
        hint = f'pip install "ident3d[{extra}]"' if extra else f"pip install {module}"
        raise ImportError(
            f"ident3d needs the optional module {module!r}, which is not installed. "
            f"Fix: {hint}"
        ) from error
