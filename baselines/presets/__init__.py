"""Training presets: one TOML file per baseline (``ident3d train --preset NAME``)."""

import tomllib
from importlib.resources import files
from typing import Any


def names() -> list[str]:
    """Every preset's name, without importing torch (the CLI lists them in its help)."""
    return sorted(p.name.removesuffix(".toml") for p in files(__name__).iterdir() if p.name.endswith(".toml"))


def read(name: str) -> dict[str, Any]:
    """A preset's settings as its file writes them, unchecked (``config.load_preset`` checks them)."""
    return tomllib.loads(files(__name__).joinpath(f"{name}.toml").read_text())
