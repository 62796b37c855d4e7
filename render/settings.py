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
    # OpenImageDenoise: the prefilter of its albedo and normal inputs and the network's quality,
    # as Blender names them (lower case). Blender's defaults, which every split rendered before
    # these fields existed used, are left out of the pixel identity, so those splits still match.
    denoise_prefilter: str = "accurate"
    denoise_quality: str = "high"

    def __post_init__(self) -> None:
        if self.denoise_prefilter not in PREFILTERS:
            raise RenderError(f"denoise_prefilter {self.denoise_prefilter!r}: expected one of "
                              f"{', '.join(PREFILTERS)}")
        if self.denoise_quality not in QUALITIES:
            raise RenderError(f"denoise_quality {self.denoise_quality!r}: expected one of "
                              f"{', '.join(QUALITIES)}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def pixel_identity(self) -> dict[str, Any]:
        """The settings that must agree for images to be mixed in one dataset."""
        d = self.to_json()
        d.pop("device")  # CPU and GPU Cycles agree to noise level; a resume may switch devices
        for key, default in BLENDER_DENOISER.items():
            if d[key] == default:
                d.pop(key)
        return d


PREFILTERS = ("accurate", "fast", "none")
QUALITIES = ("high", "balanced", "fast")
BLENDER_DENOISER = {"denoise_prefilter": "accurate", "denoise_quality": "high"}


PRESETS: dict[str, RenderSettings] = {
    # The original: 512 samples with denoising at 224 px.
    "paper": RenderSettings("paper", resolution=224, samples=512, denoise=True),
    # The fastest denoised setting with every one of 20 random images within mean absolute error
    # 1/255 of `paper` (benchmarks/render.py; docs/facts.md, "Render speed").
    "standard": RenderSettings("standard", resolution=224, samples=4, denoise=True,
                               denoise_prefilter="fast"),
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
