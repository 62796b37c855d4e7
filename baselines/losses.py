"""Contrastive losses of Zimmermann et al. (2021) and AnInfoNCE (Rusak et al., 2025), plus the
supervised topline.

Every loss is an ``nn.Module`` called as ``loss(h, h_pos, z)`` with representations of anchors and
positives, (B, d) each, and the anchors' latents. InfoNCE uses in-batch negatives: row i of the
logit matrix compares anchor i with every positive j, and the target is j = i.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ident3d.errors import TrainingError

LOSSES = ("lp", "vmf", "aninfonce", "aninfonce-isotropic", "mse")


def info_nce(logits: torch.Tensor, self_logits: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy of each anchor's positive against the in-batch positives.

    ``self_logits`` (B,), when given, adds the anchor-to-itself term the original code kept in
    the denominator (a constant for distance similarities, so it only shifts the loss).
    """
    if self_logits is not None:
        logits = torch.cat([logits, self_logits[:, None]], dim=1)
    target = torch.arange(len(logits), device=logits.device)
    return F.cross_entropy(logits, target)


class LpInfoNCE(nn.Module):
    """Similarity -||a - b||_p^p / tau: p = 2 matches Normal positives, p = 1 Laplace."""

    def __init__(self, p: float = 2.0, tau: float = 1.0, include_self: bool = False) -> None:
        super().__init__()
        self.p, self.tau, self.include_self = p, tau, include_self

    def forward(self, h: torch.Tensor, h_pos: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        distance = (h[:, None, :] - h_pos[None, :, :]).abs().pow(self.p).sum(-1)
        self_logits = torch.zeros(len(h), device=h.device, dtype=h.dtype) if self.include_self else None
        return info_nce(-distance / self.tau, self_logits)


class VonMisesFisherInfoNCE(nn.Module):
    """Dot-product similarity of L2-normalised outputs divided by tau (the vMF conditional)."""

    def __init__(self, tau: float = 1.0, include_self: bool = False) -> None:
        super().__init__()
        self.tau, self.include_self = tau, include_self

    def forward(self, h: torch.Tensor, h_pos: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        a, b = F.normalize(h, dim=1), F.normalize(h_pos, dim=1)
        self_logits = (a * a).sum(1) / self.tau if self.include_self else None
        return info_nce(a @ b.T / self.tau, self_logits)


class AnInfoNCE(nn.Module):
    """Anisotropic InfoNCE: s(a, b) = -1/2 (a - b)^T Lambda (a - b) on L2-normalised outputs,
    with a learnable diagonal Lambda = softplus(lambda) and no separate temperature.

    ``isotropic=True`` learns one precision shared by every dimension (Lambda = lambda I): the
    same loss with a learned temperature, i.e. isotropic InfoNCE, the ablation AnInfoNCE is
    compared with on equal footing.
    """

    def __init__(self, dim: int, include_self: bool = False, isotropic: bool = False) -> None:
        super().__init__()
        self.include_self = include_self
        size = 1 if isotropic else dim
        self.raw_precision = nn.Parameter(torch.full((size,), math.log(math.e - 1)))  # Lambda = 1

    @property
    def precision(self) -> torch.Tensor:
        return F.softplus(self.raw_precision)

    def forward(self, h: torch.Tensor, h_pos: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        a, b = F.normalize(h, dim=1), F.normalize(h_pos, dim=1)
        weighted = (a[:, None, :] - b[None, :, :]).pow(2) * self.precision
        self_logits = torch.zeros(len(h), device=h.device, dtype=h.dtype) if self.include_self else None
        return info_nce(-0.5 * weighted.sum(-1), self_logits)


class SupervisedMSE(nn.Module):
    """The topline: regress the anchors' latents directly."""

    def forward(self, h: torch.Tensor, h_pos: torch.Tensor | None, z: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(h, z)


def build_loss(name: str, *, dim: int, p: float = 2.0, tau: float = 1.0,
               include_self: bool = False) -> nn.Module:
    if name == "lp":
        return LpInfoNCE(p, tau, include_self)
    if name == "vmf":
        return VonMisesFisherInfoNCE(tau, include_self)
    if name in ("aninfonce", "aninfonce-isotropic"):
        return AnInfoNCE(dim, include_self, isotropic=name == "aninfonce-isotropic")
    if name == "mse":
        return SupervisedMSE()
    raise TrainingError(f"unknown loss {name!r}; expected one of {', '.join(LOSSES)}")
