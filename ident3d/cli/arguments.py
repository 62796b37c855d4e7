"""Argument types that refuse nonsense at the boundary (a usage error, exit 2) and output checks."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

from ident3d.errors import did_you_mean


def _number(kind: type, text: str, acceptable: Callable[[float], bool], wanted: str) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
    if not (math.isfinite(value) and acceptable(value)):
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
    return value


# --device has one spelling in every verb: cpu or gpu (cuda is accepted as gpu, and cuda:N where
# torch runs); these types turn it into what Blender or torch calls the device.
def device_name(text: str) -> str:
    if text in ("auto", "cpu", "cuda", "mps") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    if text == "gpu":
        return "cuda"
    raise argparse.ArgumentTypeError(f"expected cpu, gpu, auto, cuda or cuda:N, got {text!r}")


def blender_device(text: str) -> str:
    return "gpu" if text == "cuda" else text


def positive_int(text: str) -> int:
    return _number(int, text, lambda v: v >= 1, "a positive integer")


def nonnegative_int(text: str) -> int:
    return _number(int, text, lambda v: v >= 0, "an integer >= 0")


def seed_list(text: str) -> list[int]:
    """Distinct seeds >= 0 separated by commas: ``0,1,2``."""
    try:
        seeds = [int(part) for part in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"expected distinct integers >= 0 separated by commas, such as "
                                         f"0,1,2, got {text!r}")
    return seeds


def positive_float(text: str) -> float:
    return _number(float, text, lambda v: v > 0, "a positive finite number")


def split_name(text: str) -> str:
    """A split folder's name: letters, digits, '-', '_' and '.' (not leading), so it stays in --data."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", text) and ".." not in text:
        return text
    raise argparse.ArgumentTypeError(f"expected a split folder name such as train or test (letters, "
                                     f"digits, '-', '_', '.'), got {text!r}")


def variant_arg(text: str) -> str:
    """A built-in variant's name or a spec file (.toml); the spec itself is checked when it is used."""
    from ident3d.variants import builtin_names

    if text in builtin_names() or (text.endswith(".toml") and Path(text).is_file()):
        return text
    raise argparse.ArgumentTypeError(f"expected one of {', '.join(builtin_names())} or an existing .toml "
                                     f"spec file, got {text!r}.{did_you_mean(text, builtin_names())}")


VARIANT_HELP = "a built-in variant (v2, legacy, objects, causal) or a variant spec file (.toml)"


def add_dataset_root(p: argparse.ArgumentParser, help_text: str, *, old_option: str | None = None,
                     old_positional: bool = False) -> None:
    """``--data ROOT``: the dataset root, spelled the same in every verb. Spellings of earlier
    versions (``render --out``, ``download --root``, ``pack ROOT``) still work, unlisted."""
    p.add_argument("--data", type=Path, help=f"{help_text} (required)")
    if old_option:
        p.add_argument(old_option, dest="data", type=Path, help=argparse.SUPPRESS)
    if old_positional:
        p.add_argument("old_root", nargs="?", type=Path, help=argparse.SUPPRESS)
    p.set_defaults(check_data=True)
