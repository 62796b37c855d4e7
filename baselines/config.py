"""One training config: the original's defaults (docs/facts.md, "Training"), overridden by a preset file
from ``baselines/presets/`` and then by command-line values.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ident3d.baselines import presets
from ident3d.baselines.losses import LOSSES, NEGATIVES, PRECISION_MAPS
from ident3d.baselines.models import OUTPUT_SPACES, STEMS
from ident3d.baselines.positives import SOURCES
from ident3d.errors import TrainingError, did_you_mean
from ident3d.readers import read_regular

# Values that may change when a run is resumed; every other field must match the saved config.
RESUMABLE_CHANGES = frozenset({"iterations", "device", "workers", "compile", "log_every", "eval_every",
                               "eval_kernel", "checkpoint_every"})

# Integer settings and the largest value that is still a training run (not a typo or an attack
# that allocates a billion-wide layer); the lower bound is 1, 0 for the seed.
UPPER_BOUNDS = {"iterations": 10**9, "batch_size": 1 << 16, "log_every": 10**9, "checkpoint_every": 10**9,
                "latent_dim": 4096, "seed": 2**63 - 1}
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class TrainConfig:
    preset: str = "custom"
    # data: <data>/<train_split> for training, <data>/<eval_split> for scores
    data: str = ""
    train_split: str = "train"
    eval_split: str = "test"
    # latent (conditional + FAISS), rendered (a paired split's exact pairs; conditional and scale
    # are the split's), augment (SimCLR), anchors (supervised)
    positives: str = "latent"
    conditional: str = "normal"  # normal | laplace | gennorm, the positive-pair distribution
    scale: float | tuple[float, ...] = 0.1  # sigma, or one per latent
    index: str = "flat"  # FAISS index over the training latents: flat | ivf
    # model
    latent_dim: int = 10
    space: str = "box"  # box | box-sigmoid | sphere | unbounded
    stem: str = "imagenet"  # imagenet (the paper's ResNet18) | small (3x3 stride 1, no max-pool)
    # loss
    loss: str = "lp"  # lp | vmf | aninfonce | aninfonce-isotropic (one shared Lambda) | mse
    p: float = 2.0  # exponent of the lp similarity -||a - b||_p^p / tau
    tau: float = 1.0
    include_self: bool = False  # the anchor-to-itself denominator term (negatives = positives only)
    negatives: str = "positives"  # positives | anchors (the cl-ica code's) | symmetric (NT-Xent)
    precision_map: str = "softplus"  # AnInfoNCE's Lambda from its raw parameter: softplus | exp
    # optimisation (Adam)
    iterations: int = 30_000
    batch_size: int = 512
    lr: float = 1e-4
    lr_schedule: str = "constant"  # constant (the original's) | cosine (decay to 0 over the iterations)
    loss_lr: float = 1e-3  # learnable loss parameters (AnInfoNCE's Lambda)
    seed: int = 0
    # a checkpoint of another run whose trunk and linear head start this one (same latent_dim and
    # stem); the output space, the loss's parameters and the optimizer start fresh. "": a seeded init
    init_from: str = ""
    # runtime
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    amp: bool = True  # bf16 autocast on CUDA (ignored on CPU)
    compile: bool = False  # torch.compile the encoder
    workers: int = -1  # DataLoader processes; -1: 0 on CPU, up to 8 on CUDA
    log_every: int = 50
    eval_every: int = 1000  # cheap linear R^2 / MCC on eval_images held-out images; 0: never
    eval_images: int = 1024
    eval_kernel: bool = False  # each evaluation also logs the kernel R² per latent (a second or two more)
    checkpoint_every: int = 1000

    def __post_init__(self) -> None:
        choices = {"positives": SOURCES, "loss": LOSSES, "space": tuple(OUTPUT_SPACES),
                   "index": ("flat", "ivf"), "stem": STEMS,
                   "lr_schedule": ("constant", "cosine"), "negatives": NEGATIVES,
                   "precision_map": tuple(PRECISION_MAPS)}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise TrainingError(f"config {name} = {getattr(self, name)!r}; expected one of "
                                    f"{', '.join(allowed)}")
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", str(self.device)):
            raise TrainingError(f"config device = {self.device!r}; expected auto, cpu, cuda or cuda:N")
        for name, high in UPPER_BOUNDS.items():
            low = 0 if name == "seed" else 1
            if not low <= getattr(self, name) <= high:
                raise TrainingError(f"config {name} = {getattr(self, name)}; expected an integer from "
                                    f"{low} to {high:,}. Fix: set {name} within that range.")
        for name in ("lr", "loss_lr", "tau", "p"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise TrainingError(f"config {name} = {value!r}; expected a positive number")
        scales = self.scale if isinstance(self.scale, tuple) else (self.scale,)
        if not scales or not all(isinstance(v, int | float) and math.isfinite(v) and v > 0
                                 for v in scales):
            raise TrainingError(f"config scale = {self.scale!r}; expected a positive number or one "
                                "positive number per latent")
        if self.eval_every < 0 or self.eval_images < 2 or self.workers < -1:
            raise TrainingError(f"config eval_every = {self.eval_every}, eval_images = "
                                f"{self.eval_images}, workers = {self.workers}; expected eval_every >= 0, "
                                "eval_images >= 2 and workers >= -1")
        if self.loss != "mse" and self.batch_size < 2:
            raise TrainingError("config batch_size must be at least 2: InfoNCE needs in-batch negatives")
        if self.checkpoint_every % self.log_every:
            raise TrainingError(f"config checkpoint_every = {self.checkpoint_every} must be a multiple of "
                                f"log_every = {self.log_every} so a resumed log matches an unbroken one")
        if (self.loss == "mse") != (self.positives == "anchors"):
            raise TrainingError("config: the supervised loss (mse) goes with positives = 'anchors', and "
                                "only with it")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def preset_names() -> list[str]:
    return presets.names()


def _expected_type(name: str) -> tuple[type, ...]:
    default = next(f.default for f in fields(TrainConfig) if f.name == name)
    if name == "scale":
        return (int, float, list, tuple)
    return (int, float) if isinstance(default, float) else (type(default),)


def _coerce(values: dict[str, Any], source: str) -> dict[str, Any]:
    known = {f.name for f in fields(TrainConfig)} - {"preset"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise TrainingError(f"{source}: unknown setting(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(known))}")
    for key, value in values.items():
        expected = _expected_type(key)
        if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
            raise TrainingError(f"{source}: {key} = {value!r} is a {type(value).__name__}; expected "
                                f"{' or '.join(t.__name__ for t in expected)}")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


def read_config_file(path: Path) -> dict[str, Any]:
    """Settings from a user's TOML file (same keys as a preset), checked."""
    try:
        values = tomllib.loads(read_regular(Path(path), MAX_CONFIG_BYTES).decode())
    except (OSError, ValueError) as error:  # ValueError: too large, not UTF-8, not TOML
        raise TrainingError(f"{path}: not a readable TOML config ({error}). Fix: write key = value "
                            "lines with the keys of baselines/presets/*.toml.") from None
    return _coerce(values, str(path))


def parse_settings(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` strings; a value is read as TOML (numbers, booleans, [lists]) or else as text."""
    values = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise TrainingError(f"--set {pair!r}: expected key=value, e.g. --set lr=3e-4")
        try:
            values[key.strip()] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            values[key.strip()] = text
    return _coerce(values, "--set")


def load_preset(name: str, **overrides: Any) -> TrainConfig:
    """The preset's config with ``overrides`` applied (None values are ignored)."""
    if name not in preset_names():
        raise TrainingError(f"unknown preset {name!r}; expected one of {', '.join(preset_names())}."
                            f"{did_you_mean(name, preset_names())} Fix: pick one, or pass your own "
                            "settings with --config FILE.toml / --set.")
    values = _coerce(presets.read(name), f"baselines/presets/{name}.toml")
    values.update(_coerce({k: v for k, v in overrides.items() if v is not None}, "overrides"))
    return TrainConfig(preset=name, **values)


def build_config(preset: str, *, data: Path | str, config_file: Path | None = None,
                 settings: Sequence[str] = (), **flags: Any) -> TrainConfig:
    """A run's config in layers, each later one winning: the preset, the TOML ``config_file``, each
    ``key=value`` of ``settings`` in order, the ``flags`` that are not None, and ``data``."""
    layers = read_config_file(config_file) if config_file else {}
    layers.update(parse_settings(list(settings)))
    layers.update({k: v for k, v in flags.items() if v is not None})
    return load_preset(preset, **{**layers, "data": str(data)})


def from_json(values: dict[str, Any]) -> TrainConfig:
    values = dict(values)
    preset = values.pop("preset", "custom")
    return TrainConfig(preset=preset, **_coerce(values, "config.json"))


def resume_differences(saved: TrainConfig, now: TrainConfig) -> list[str]:
    old, new = saved.to_json(), now.to_json()
    free = RESUMABLE_CHANGES - ({"iterations"} if saved.lr_schedule != "constant" else set())
    return [f"{k}: saved {old[k]!r}, now {new[k]!r}" for k in old if k not in free and old[k] != new[k]]

