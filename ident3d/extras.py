"""Import optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

EXTRA_OF_MODULE = {
    "bpy": "render",
    "faiss": "faiss",
    "ray": "distributed",
    "zenodo_get": "zenodo",
    "pyarrow": "exchange",
    "datasets": "exchange",
    "webdataset": "exchange",
    "torchvision": "baselines",
}


# Distributions that all install the module ``faiss``; with two of them one silently overwrites the
# other's files, so ident3d refuses to guess which one is loaded.
FAISS_DISTRIBUTIONS = ("faiss-cpu", "faiss-gpu", "faiss-gpu-cu12")


def installed(distributions: tuple[str, ...]) -> list[str]:
    found = []
    for name in distributions:
        try:
            version(name)
            found.append(name)
        except PackageNotFoundError:
            pass
    return found


def require(module: str) -> ModuleType:
    """Import ``module`` or raise ImportError naming the ``pip install "ident3d[extra]"`` to run."""
    if module == "faiss" and len(clash := installed(FAISS_DISTRIBUTIONS)) > 1:
        raise ImportError(f"{' and '.join(clash)} are both installed and both own the module 'faiss', "
                          f"so neither is reliably the one loaded. Fix: pip uninstall -y {' '.join(clash)}, "
                          'then pip install "ident3d[faiss]" (CPU) or "ident3d[gpu]" (CUDA), not both.')
    try:
        return importlib.import_module(module)
    except ImportError as error:
        extra = EXTRA_OF_MODULE.get(module.split(".")[0])
        hint = f'pip install "ident3d[{extra}]"' if extra else f"pip install {module}"
        raise ImportError(
            f"ident3d needs the optional module {module!r}, which is not installed. "
            f"Fix: {hint}"
        ) from error
