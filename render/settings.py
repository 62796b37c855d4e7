"""Render settings and the quality presets (docs/facts.md, "Scene" and "Blender as a module")."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from ident3d.errors import RenderError


@dataclass(frozen=True)
class RenderSettings:
    """Everything that changes the pixels besides the latents."""

    preset: str
    resolution: int
    samples: int
    denoise: bool
    device: str = "cpu"  # "cpu" or "gpu"
    engine: str = "CYCLES"
    cycles_seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def pixel_identity(self) -> dict[str, Any]:
        """The settings that must agree for images to be mixed in one dataset."""
        d = self.to_json()
        d.pop("device")  # CPU and GPU Cycles agree to noise level; a resume may switch devices
        return d


PRESETS: dict[str, RenderSettings] = {
    # The original: 512 samples with denoising at 224 px.
    "paper": RenderSettings("paper", resolution=224, samples=512, denoise=True),
    # The fewest denoised samples with every one of 20 random images within mean absolute error
    # 1/255 of `paper`: 4 (worst image 0.82/255; 2 samples reach 1.14). benchmarks/render.py.
    "standard": RenderSettings("standard", resolution=224, samples=4, denoise=True),
    # Tests, the demo and quick looks.
    "preview": RenderSettings("preview", resolution=64, samples=4, denoise=False),
}


def track_settings(track, device: str = "cpu") -> RenderSettings:
    """The settings of a benchmark track (``ident3d.tracks.Track``), on ``device``."""
    s = RenderSettings(resolution=track.resolution, device=device, **track.render)
    if s.pixel_identity() != track.pixel_settings():
        raise RenderError(f"track {track.id}: its render settings {track.render} are incomplete")
    return s


def resolve_settings(preset: str = "standard", resolution: int | None = None,
                     samples: int | None = None, denoise: bool | None = None,
                     device: str = "cpu") -> RenderSettings:
    if preset not in PRESETS:
        raise RenderError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    if device not in ("cpu", "gpu"):
        raise RenderError(f"device must be 'cpu' or 'gpu', got {device!r}")
    s = replace(PRESETS[preset], device=device)
    if resolution is not None:
        if resolution < 8:
            raise RenderError(f"resolution must be at least 8 px, got {resolution}")
        s = replace(s, resolution=resolution)
    if samples is not None:
        if samples < 1:
            raise RenderError(f"samples must be at least 1, got {samples}")
        s = replace(s, samples=samples)
    if denoise is not None:
        s = replace(s, denoise=denoise)
    return s
