"""Architectures the evaluator can rebuild from safetensors weights; ``baselines`` fills it.

A factory takes the config stored in the safetensors metadata and returns an ``nn.Module`` whose
``load_state_dict`` accepts the file's tensors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ident3d.errors import SubmissionError

ARCHITECTURES: dict[str, Callable[[dict[str, Any]], Any]] = {}
PROVIDERS = ("baselines.models",)  # imported on demand, never at ident3d's import time


def register(name: str) -> Callable:
    def wrap(factory: Callable[[dict[str, Any]], Any]) -> Callable:
        ARCHITECTURES[name] = factory
        return factory

    return wrap


def build(name: str, config: dict[str, Any]) -> Any:
    if name not in ARCHITECTURES:
        for provider in PROVIDERS:
            try:
                importlib.import_module(provider)
            except ImportError:
                continue
    if name not in ARCHITECTURES:
        known = ", ".join(sorted(ARCHITECTURES)) or "none"
        raise SubmissionError(f"--arch {name!r} is not a registered architecture (known: {known}). "
                              "Fix: use a registered name, or export the model to .pt2.")
    return ARCHITECTURES[name](config)
