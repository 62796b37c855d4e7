"""The one place a requested device becomes a torch device (evaluation, training); the command
line's ``--device`` spelling (cpu, gpu, auto, cuda, cuda:N) is normalised by
``ident3d.cli.arguments.device_name`` before it gets here."""

from __future__ import annotations

import platform
from pathlib import Path

import torch

from ident3d.errors import DeviceError


def resolve_device(requested: str | None) -> torch.device:
    """The torch device for ``requested`` (``None`` or ``"auto"``: CUDA when available, else the CPU),
    or a DeviceError that names the fix."""
    requested = None if requested == "auto" else requested
    try:
        dev = torch.device(requested or ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError:
        raise DeviceError(f"--device {requested!r} is not a torch device. Fix: use cpu or cuda."
                          ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DeviceError("a GPU was asked for (--device gpu, cuda or cuda:N) but torch sees no CUDA GPU. "
                          "Fix: run on a GPU machine, or pass --device cpu.")
    if dev.type not in ("cpu", "cuda"):
        raise DeviceError(f"--device {requested}: only cpu and cuda are supported. Fix: use one.")
    return dev


def cpu_model() -> str:
    """The processor's model name (Linux's /proc/cpuinfo, else what the platform says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_description(device: torch.device) -> str:
    """What a result says it ran on: the GPU's name, or the CPU's model and the threads torch used."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{cpu_model()}, {torch.get_num_threads()} threads"
