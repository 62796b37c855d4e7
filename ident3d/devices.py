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
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise DeviceError(f"--device {requested}: torch sees {torch.cuda.device_count()} CUDA GPU(s), "
                          f"numbered from 0. Fix: pass cuda:0 to cuda:{torch.cuda.device_count() - 1}.")
    return dev


def visible_devices(asked: str) -> list[str]:
    """The devices of ``--devices``: ``all`` for every CUDA GPU torch sees, or a comma list of device
    names (``cuda:0,cuda:1``; the same name twice runs two processes on it), each checked."""
    if asked == "all":
        count = torch.cuda.device_count()
        if not count:
            raise DeviceError("--devices all: torch sees no CUDA GPU. Fix: run on a GPU machine, or "
                              "drop --devices to run on one device.")
        return [f"cuda:{i}" for i in range(count)]
    names = [name.strip() for name in asked.split(",")]
    if not all(names):
        raise DeviceError(f"--devices {asked!r}: expected all or a comma list of devices such as "
                          "cuda:0,cuda:1. Fix: name each device once per process.")
    for name in names:
        resolve_device(name)
    return names


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
