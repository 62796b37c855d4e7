"""The data model of a variant: its factors (latents), their mechanisms, and the checks of raw latents
against them. Sampling lives in ``ident3d.variants.sampling``, the mapping to the scene in
``ident3d.variants.scene_mapping``, reading and validating specs in ``ident3d.variants.spec``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ident3d.errors import LatentError
from ident3d.latents import RAW_HIGH, RAW_LOW
from ident3d.readers import is_real_numeric
from ident3d.scene import QUANTITIES

if TYPE_CHECKING:
    from ident3d.scene import SceneParams


class VariantError(LatentError):
    """A variant spec that cannot be used, with the file and key named."""


@dataclass(frozen=True)
class Mechanism:
    """A child latent's structural equation: truncated normal around a mean set by its parents."""

    noise: float
    bias: float = 0.0
    weights: dict[str, float] = field(default_factory=dict)  # continuous parent -> coefficient
    means: dict[str, tuple[float, ...]] = field(default_factory=dict)  # class parent -> mean per class

    @property
    def parents(self) -> tuple[str, ...]:
        return (*self.weights, *self.means)

    def formula(self) -> str:
        terms = [f"{self.bias:g}"] if self.bias else []
        terms += [f"{w:g} {p}" for p, w in self.weights.items()]
        terms += [f"m_{p}[{p}]" for p in self.means]
        means = "".join(f"; m_{p} = ({', '.join(f'{v:g}' for v in m)})" for p, m in self.means.items())
        return f"N({' + '.join(terms) or '0'}, {self.noise:g}^2) truncated to [-1, 1]{means}"


@dataclass(frozen=True)
class Factor:
    """One latent of a variant: where it sits in the raw vector and what it controls in the scene."""

    index: int
    name: str
    group: str
    drives: str  # a key of ident3d.scene.QUANTITIES
    description: str
    scale: float = 1.0
    scale_text: str = "1"
    offset: float = 0.0
    classes: tuple[str, ...] = ()  # non-empty: a discrete latent with these classes
    mechanism: Mechanism | None = None

    @property
    def is_class(self) -> bool:
        return bool(self.classes)

    @property
    def scene_quantity(self) -> str:
        return QUANTITIES[self.drives].label

    @property
    def unit(self) -> str:
        return QUANTITIES[self.drives].unit

    @property
    def low(self) -> float:
        return 0.0 if self.is_class else RAW_LOW

    @property
    def high(self) -> float:
        return float(len(self.classes) - 1) if self.is_class else RAW_HIGH


@dataclass(frozen=True)
class Variant:
    name: str
    title: str
    summary: str
    colour: str  # a key of ident3d.scene.MAPPINGS
    factors: tuple[Factor, ...]
    source: str  # "built-in" or the file it was read from

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.factors)

    @property
    def n_latents(self) -> int:
        return len(self.factors)

    @property
    def class_columns(self) -> list[int]:
        return [f.index for f in self.factors if f.is_class]

    @property
    def continuous_columns(self) -> list[int]:
        return [f.index for f in self.factors if not f.is_class]

    @property
    def edges(self) -> list[tuple[str, str]]:
        """The causal DAG as (parent, child) pairs, in factor order."""
        return [(p, f.name) for f in self.factors if f.mechanism for p in f.mechanism.parents]

    def to_dict(self) -> dict[str, Any]:
        """The resolved spec (no ``extends``), as stored in a split's manifest."""
        latents = []
        for f in self.factors:
            row: dict[str, Any] = {"name": f.name, "group": f.group, "drives": f.drives,
                                   "description": f.description}
            if f.is_class:
                row["classes"] = list(f.classes)
            else:
                row.update(scale=f.scale_text, offset=f.offset)
            if f.mechanism:
                row["mechanism"] = {k: v for k, v in asdict(f.mechanism).items() if v}
            latents.append(row)
        return {"name": self.name, "title": self.title, "summary": self.summary, "colour": self.colour,
                "latents": latents}

    # --- latents -------------------------------------------------------------------------------
    def check_raw(self, z: np.ndarray, what: str = "raw latents", atol: float = 1e-6) -> np.ndarray:
        """``z`` as float64 (N, k), or LatentError naming the first bad row and column."""
        z = np.asarray(z)
        k = self.n_latents
        if z.ndim != 2 or z.shape[1] != k:
            raise LatentError(f"{what}: expected an array of shape (N, {k}) for variant {self.name!r}, "
                              f"got shape {z.shape}. Fix: pass one row of {k} raw latents per image.")
        if not is_real_numeric(z):
            raise LatentError(f"{what}: expected real numbers, got dtype {z.dtype}. "
                              "Fix: save a float array (complex, bool and text are refused).")
        z = z.astype(np.float64, copy=False)
        low = np.array([f.low for f in self.factors]) - atol
        high = np.array([f.high for f in self.factors]) + atol
        bad = ~np.isfinite(z) | (z < low) | (z > high)
        classes = self.class_columns
        bad[:, classes] |= np.isfinite(z[:, classes]) & (z[:, classes] != np.round(z[:, classes]))
        if bad.any():
            row, col = np.argwhere(bad)[0]
            f = self.factors[col]
            expected = (f"a class index 0 .. {len(f.classes) - 1}" if f.is_class
                        else f"a finite value in [{RAW_LOW}, {RAW_HIGH}]")
            raise LatentError(f"{what}: row {row}, column {col} ({f.name}) is {z[row, col]!r}; expected "
                              f"{expected}. Fix: continuous raw latents live in [-1, 1]; class latents "
                              "hold the class number.")
        return np.clip(z, low + atol, high - atol)

    # --- sampling (ident3d.variants.sampling) and the scene (ident3d.variants.scene_mapping) ---------
    def sample(self, n: int, seed: int | list[int]) -> np.ndarray:
        from ident3d.variants.sampling import sample

        return sample(self, n, seed)

    def sample_pairs(self, n: int, seed: int, kind: str = "normal", scale: float | np.ndarray = 0.1,
                     beta: float | None = None, style: tuple[str, ...] | list[str] = ()) -> np.ndarray:
        from ident3d.variants.sampling import sample_pairs

        return sample_pairs(self, n, seed, kind, scale, beta, style)

    def scene_values(self, raw: np.ndarray) -> np.ndarray:
        from ident3d.variants.scene_mapping import scene_values

        return scene_values(self, raw)

    def scene_params(self, raw: np.ndarray) -> SceneParams:
        from ident3d.variants.scene_mapping import scene_params

        return scene_params(self, raw)

    def scene_latents(self, raw: np.ndarray) -> np.ndarray:
        from ident3d.variants.scene_mapping import scene_latents

        return scene_latents(self, raw)

    def formulas(self) -> tuple[str, ...]:
        from ident3d.variants.scene_mapping import formulas

        return formulas(self)
