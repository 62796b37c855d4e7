"""Checkpoints of a training run: encoder, loss parameters and Adam state in one safetensors file
(no pickle), with the run's own metadata strings beside them; written atomically."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ident3d import atomic
from ident3d.errors import TrainingError


def save_checkpoint(path: Path, step: int, model: torch.nn.Module, loss: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, metadata: dict[str, str]) -> None:
    """Write the three states and ``metadata`` (the caller's own strings) in one safetensors file."""
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors |= {f"loss.{k}": v for k, v in loss.state_dict().items()}
    state = optimizer.state_dict()
    for index, slots in state["state"].items():
        tensors |= {f"optimizer.{index}.{name}": value for name, value in slots.items()}
    tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    metadata = metadata | {"step": str(step), "param_groups": json.dumps(state["param_groups"])}
    with atomic.atomic_path(path, suffix=".safetensors") as tmp:
        save_file(tensors, str(tmp), metadata=metadata)


@contextmanager
def readable_checkpoint(path: Path) -> Iterator[None]:
    """Turn any failure to read a checkpoint (truncated, crafted, mismatched) into one clear error."""
    try:
        yield
    except TrainingError:
        raise
    except Exception as error:  # safetensors, json and torch raise many types here
        raise TrainingError(f"{path}: cannot restore this checkpoint ({type(error).__name__}: "
                            f"{error}). Fix: restore the file, or start again in a new --out."
                            ) from None


def load_checkpoint(path: Path, model: torch.nn.Module, loss: torch.nn.Module,
                    optimizer: torch.optim.Optimizer) -> tuple[int, dict[str, str]]:
    """Restore the states in place; return the step the checkpoint was taken after and its metadata."""
    parts: dict[str, dict[str, torch.Tensor]] = {"model": {}, "loss": {}, "optimizer": {}}
    with readable_checkpoint(path):
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata()
            for key in f.keys():
                part, name = key.split(".", 1)
                parts[part][name] = f.get_tensor(key)
        model.load_state_dict(parts["model"])
        loss.load_state_dict(parts["loss"])
        slots: dict[int, dict[str, torch.Tensor]] = {}
        for name, value in parts["optimizer"].items():
            index, slot = name.split(".", 1)
            slots.setdefault(int(index), {})[slot] = value
        optimizer.load_state_dict({"state": slots,
                                   "param_groups": json.loads(metadata["param_groups"])})
        return int(metadata["step"]), metadata


def model_tensors(path: Path, prefixes: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """The model's tensors whose names start with one of ``prefixes`` (names without "model.")."""
    with readable_checkpoint(path), safe_open(str(path), framework="pt") as f:
        return {key.removeprefix("model."): f.get_tensor(key) for key in f.keys()
                if key.removeprefix("model.").startswith(prefixes) and key.startswith("model.")}


def checkpoint_metadata(path: Path) -> dict[str, str]:
    with readable_checkpoint(path), safe_open(str(path), framework="pt") as f:
        return f.metadata()
