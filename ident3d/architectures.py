"""Architectures the evaluator can rebuild from safetensors weights.

A factory takes the config stored in the safetensors metadata and returns an ``nn.Module`` whose
``load_state_dict`` accepts the file's tensors. Packages offer factories as entry points of the
group ``ident3d.architectures`` (the baselines' ``resnet18-contrastive`` is one, see
``pyproject.toml``), loaded only when that name is asked for; code in the same process can also
``register`` one.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from ident3d.errors import SubmissionError

GROUP = "ident3d.architectures"
ARCHITECTURES: dict[str, Callable[[dict[str, Any]], Any]] = {}


def register(name: str) -> Callable:
    def wrap(factory: Callable[[dict[str, Any]], Any]) -> Callable:
        ARCHITECTURES[name] = factory
        return factory

    return wrap


def known() -> list[str]:
    return sorted({*ARCHITECTURES, *(ep.name for ep in entry_points(group=GROUP))})


def build(name: str, config: dict[str, Any]) -> Any:
    if name not in ARCHITECTURES:
        for point in entry_points(group=GROUP, name=name):
            ARCHITECTURES[name] = point.load()  # an import error here is the provider's, and shown
    if name not in ARCHITECTURES:
        raise SubmissionError(f"--arch {name!r} is not a registered architecture (known: "
                              f"{', '.join(known()) or 'none'}). Fix: use a registered name, or export "
                              "the model to .pt2.")
    return ARCHITECTURES[name](config)
