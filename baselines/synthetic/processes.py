"""The generative processes of the synthetic experiments: latents in a space with a marginal, positives
from a conditional around each latent, observations through a random invertible MLP.

Settings follow the cl-ica code of Zimmermann et al. (ICML 2021; ``main_mlp.py``, ``spaces.py``,
``invertible_network_utils.py``) and the AnInfoNCE code of Rusak et al. (AISTATS 2025;
``extended_sphere_space.py``); every draw comes from a numpy Generator the caller seeds, so a run is
reproducible step by step and resumable without sampler state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ident3d.errors import TrainingError
from ident3d.latents import conditional_distribution, conditional_from_uniform

SPACES = ("box", "sphere", "unbounded")
MARGINALS = ("uniform", "normal", "laplace")
MARGINALS_OF = {"box": ("uniform",), "sphere": ("uniform", "normal"), "unbounded": ("normal", "laplace")}
CONDITIONALS = ("normal", "laplace", "gennorm", "vmf", "anisotropic-normal")
BOX = (0.0, 1.0)  # the cl-ica default (--box-min 0, --box-max 1)
MIXING_SLOPE = 0.2  # leaky ReLU slope of the mixing MLP
CONDITION_POOL = 25_000  # random matrices drawn to set the condition-number threshold


@dataclass(frozen=True)
class Process:
    """One generative process: ``space`` and its ``marginal`` (``marginal_scale`` for normal and
    laplace on the unbounded space; on the sphere a normal of that std around the first axis,
    projected, as ``main_mlp.py`` samples it), the positives' ``conditional`` with ``scale`` (std for normal,
    b for laplace, alpha for gennorm with exponent ``beta``, kappa for vmf), or per-latent
    ``precisions`` for the anisotropic normal on the sphere (positives off the sphere by more than
    ``shell`` are redrawn, then projected)."""

    space: str
    marginal: str = "uniform"
    conditional: str = "normal"
    scale: float = 0.05
    beta: float | None = None
    marginal_scale: float = 1.0
    precisions: tuple[float, ...] = ()
    shell: float = 0.1
    dim: int = 10

    def __post_init__(self) -> None:
        for name, allowed in (("space", SPACES), ("marginal", MARGINALS), ("conditional", CONDITIONALS)):
            if getattr(self, name) not in allowed:
                raise TrainingError(f"process {name} = {getattr(self, name)!r}; expected one of "
                                    f"{', '.join(allowed)}")
        if self.marginal not in MARGINALS_OF[self.space]:
            raise TrainingError(f"process: a {self.marginal} marginal on the {self.space} space is not "
                                f"defined; expected one of {', '.join(MARGINALS_OF[self.space])}")
        if self.conditional in ("vmf", "anisotropic-normal") and self.space != "sphere":
            raise TrainingError(f"process: the {self.conditional} conditional lives on the sphere, "
                                f"not on the {self.space} space")
        if self.conditional == "anisotropic-normal" and len(self.precisions) != self.dim:
            raise TrainingError(f"process: anisotropic-normal needs {self.dim} precisions, got "
                                f"{len(self.precisions)}")

    def marginal_sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.space == "box":
            return rng.uniform(*BOX, size=(n, self.dim))
        if self.space == "sphere" and self.marginal == "normal":
            return _project(np.eye(1, self.dim) + self.marginal_scale * rng.standard_normal((n, self.dim)))
        if self.space == "sphere":
            return _project(rng.standard_normal((n, self.dim)))
        noise = rng.standard_normal if self.marginal == "normal" else rng.laplace
        return noise(size=(n, self.dim)) * self.marginal_scale

    def conditional_sample(self, rng: np.random.Generator, z: np.ndarray) -> np.ndarray:
        if self.conditional == "vmf":
            return von_mises_fisher(rng, z, self.scale)
        if self.conditional == "anisotropic-normal":
            return anisotropic_sphere_normal(rng, z, np.asarray(self.precisions), self.shell)
        if self.space == "box":
            return conditional_from_uniform(z, rng.random(z.shape), self.conditional, self.scale,
                                            self.beta, low=BOX[0], high=BOX[1])
        dist = conditional_distribution(self.conditional, self.beta)
        positive = z + self.scale * dist.rvs(size=z.shape, random_state=rng)
        return _project(positive) if self.space == "sphere" else positive

    def pairs(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        z = self.marginal_sample(rng, n)
        return z, self.conditional_sample(rng, z)


def _project(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def von_mises_fisher(rng: np.random.Generator, mu: np.ndarray, kappa: float) -> np.ndarray:
    """One draw per row of unit vectors ``mu`` from vMF(mu, kappa) on S^(d-1) (Wood, 1994)."""
    n, d = mu.shape
    b = (d - 1) / (2 * kappa + np.sqrt(4 * kappa**2 + (d - 1) ** 2))
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (d - 1) * np.log(1 - x0**2)
    w = np.empty(n)
    todo = np.arange(n)
    while len(todo):  # rejection sampling of the cosine to mu; accepts more than half the draws
        beta = rng.beta((d - 1) / 2, (d - 1) / 2, size=len(todo))
        candidate = (1 - (1 + b) * beta) / (1 - (1 - b) * beta)
        accept = kappa * candidate + (d - 1) * np.log(1 - x0 * candidate) - c >= np.log(rng.random(len(todo)))
        w[todo[accept]] = candidate[accept]
        todo = todo[~accept]
    tangent = rng.standard_normal((n, d))
    tangent -= (tangent * mu).sum(1, keepdims=True) * mu
    tangent = _project(tangent)
    return w[:, None] * mu + np.sqrt(np.clip(1 - w**2, 0, None))[:, None] * tangent


def anisotropic_sphere_normal(rng: np.random.Generator, mu: np.ndarray, precisions: np.ndarray,
                              shell: float) -> np.ndarray:
    """mu + N(0, diag(1 / precisions)), redrawn until its norm is within ``shell`` of 1, projected
    onto the sphere (the "rejected projected normal" of the AnInfoNCE code)."""
    result = np.empty_like(mu)
    todo = np.arange(len(mu))
    while len(todo):
        candidate = mu[todo] + rng.standard_normal((len(todo), mu.shape[1])) / np.sqrt(precisions)
        norm = np.linalg.norm(candidate, axis=1)
        accept = np.abs(1 - norm) < shell
        result[todo[accept]] = candidate[accept] / norm[accept, None]
        todo = todo[~accept]
    return result


def _column_normalised(rng: np.random.Generator, count: int, n: int) -> np.ndarray:
    a = rng.uniform(-1, 1, size=(count, n, n))
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def invertible_mlp(n: int, layers: int, seed: int, threshold_quantile: float = 0.0) -> nn.Sequential:
    """The mixing g: ``layers`` bias-free n x n linear maps with leaky ReLU (slope 0.2) between them.

    Each weight matrix has uniform [-1, 1] entries with unit-norm columns and a condition number at
    most the ``threshold_quantile`` of a pool of 25,000 such matrices (the cl-ica code's
    ``construct_invertible_mlp`` with ``cond_thresh_ratio=0``: as well-conditioned as the best of
    the pool), so g is invertible and not close to singular.
    """
    rng = np.random.default_rng([seed, 7])
    threshold = np.quantile(np.linalg.cond(_column_normalised(rng, CONDITION_POOL, n)), threshold_quantile)
    modules: list[nn.Module] = []
    for i in range(layers):
        while True:
            pool = _column_normalised(rng, CONDITION_POOL, n)
            good = np.flatnonzero(np.linalg.cond(pool) <= threshold)
            if len(good):
                break
        linear = nn.Linear(n, n, bias=False)
        linear.weight.data = torch.tensor(pool[good[0]], dtype=torch.float32)
        modules.append(linear)
        if i < layers - 1:
            modules.append(nn.LeakyReLU(MIXING_SLOPE))
    mixing = nn.Sequential(*modules)
    mixing.requires_grad_(False)
    return mixing

