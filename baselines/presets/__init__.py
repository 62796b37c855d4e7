"""Training presets: one TOML file per baseline (``ident3d train --preset NAME``)."""

from importlib.resources import files


def names() -> list[str]:
    """Every preset's name, without importing torch (the CLI lists them in its help)."""
    return sorted(p.name.removesuffix(".toml") for p in files(__name__).iterdir() if p.name.endswith(".toml"))
