"""Contrastive losses of Zimmermann et al. (2021) and AnInfoNCE (Rusak et al., 2025), plus the
supervised topline.

Every loss is an ``nn.Module`` called as ``loss(h, h_pos, z)`` with representations of anchors and
positives, (B, d) each, and the anchors' latents. InfoNCE uses in-batch negatives; which ones is
``ContrastiveLoss``'s ``negatives`` (the package's default, the cl-ica code's, or NT-Xent's).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

from ident3d.errors import TrainingError

# name -> builder taking ``build_loss``'s options; each loss adds itself where it is defined (``registered``)
LOSSES: dict[str, Callable[..., nn.Module]] = {}


def registered(*names: str) -> Callable[[type], type]:
    """Class decorator: ``build_loss(name, ...)`` builds the class by its ``from_options(name, ...)``."""
    def add(cls: type) -> type:
        for name in names:
            LOSSES[name] = functools.partial(cls.from_options, name)
        return cls
    return add


NEGATIVES = ("positives", "anchors", "symmetric")


class ContrastiveLoss(nn.Module):
    """InfoNCE over a similarity s(a, b) that a subclass defines, with one of three denominators.

    ``negatives``:

    * ``positives``: anchor i against every positive j, target j = i (this package's default);
      ``include_self`` adds the anchor-to-itself term s(a_i, a_i);
    * ``anchors``: anchor i against every anchor j, itself included, plus its own positive (the
      cl-ica code of Zimmermann et al., whose negatives are the batch's anchors rolled by one);
    * ``symmetric``: each of the 2B views against the other 2B - 1, target its partner
      (NT-Xent; the AnInfoNCE code of Rusak et al.).
    """

    def __init__(self, include_self: bool = False, negatives: str = "positives") -> None:
        super().__init__()
        if negatives not in NEGATIVES:
            raise TrainingError(f"unknown negatives {negatives!r}; expected one of {', '.join(NEGATIVES)}")
        if include_self and negatives != "positives":
            raise TrainingError(f"include_self applies to negatives = 'positives' only (negatives "
                                f"{negatives!r} fixes the self term). Fix: drop include_self.")
        self.include_self, self.negatives = include_self, negatives

    def embed(self, h: torch.Tensor) -> torch.Tensor:
        return h

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """(len(a), len(b)) logits between every row of ``a`` and every row of ``b``."""
        raise NotImplementedError

    def paired(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """(len(a),) logits between row i of ``a`` and row i of ``b``."""
        raise NotImplementedError

    def forward(self, h: torch.Tensor, h_pos: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        a, b = self.embed(h), self.embed(h_pos)
        n = len(a)
        rows = torch.arange(n, device=a.device)
        if self.negatives == "anchors":
            logits = torch.cat([self.similarity(a, a), self.paired(a, b)[:, None]], dim=1)
            return F.cross_entropy(logits, torch.full_like(rows, n))
        if self.negatives == "symmetric":
            views = torch.cat([a, b])
            logits = self.similarity(views, views)
            logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=a.device), -math.inf)
            return F.cross_entropy(logits, torch.cat([rows + n, rows]))
        logits = self.similarity(a, b)
        if self.include_self:
            logits = torch.cat([logits, self.paired(a, a)[:, None]], dim=1)
        return F.cross_entropy(logits, rows)


@registered("lp")
class LpInfoNCE(ContrastiveLoss):
    """Similarity -||a - b||_p^p / tau: p = 2 matches Normal positives, p = 1 Laplace."""

    def __init__(self, p: float = 2.0, tau: float = 1.0, include_self: bool = False,
                 negatives: str = "positives") -> None:
        super().__init__(include_self, negatives)
        self.p, self.tau = p, tau

    @classmethod
    def from_options(cls, name: str, *, p: float, tau: float, include_self: bool, negatives: str,
                     **_: object) -> LpInfoNCE:
        return cls(p, tau, include_self, negatives)

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.p > 1 and self.p != 2:
            return -lp_power_distances(a, b, self.p) / self.tau
        # cdist never builds the (len(a), len(b), d) difference tensor (p = 2 goes through a matmul)
        return -torch.cdist(a, b, p=self.p).pow(self.p) / self.tau

    def paired(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return -(a - b).abs().pow(self.p).sum(-1) / self.tau


CHUNK_ELEMENTS = 2**24  # elements of the (rows, len(b), d) differences held at once: 64 MiB in float32


def lp_power_distances(a: torch.Tensor, b: torch.Tensor, p: float) -> torch.Tensor:
    """(len(a), len(b)) sums over the features of |a_i - b_j|^p for p > 1, without the root that
    ``torch.cdist`` takes and ``pow(p)`` undoes. cdist's kernel for p other than 1 and 2 makes a step
    of the L3 rows slower (``python -m benchmarks.synthetic_step``, the exponent table).
    Computed in row chunks; the backward recomputes the differences instead of keeping them, so
    memory stays at one chunk whatever the batch."""
    return _LpPowerDistances.apply(a, b, p)


def _row_chunks(a: torch.Tensor, b: torch.Tensor) -> list[slice]:
    rows = max(1, CHUNK_ELEMENTS // max(1, b.numel()))
    return [slice(start, start + rows) for start in range(0, len(a), rows)]


class _LpPowerDistances(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, p: float) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        ctx.p = p
        out = a.new_empty(len(a), len(b))
        for rows in _row_chunks(a, b):
            out[rows] = (a[rows, None] - b[None]).abs_().pow_(p).sum(-1)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        a, b = ctx.saved_tensors
        grad_a, grad_b = torch.empty_like(a), torch.zeros_like(b)
        for rows in _row_chunks(a, b):
            diff = a[rows, None] - b[None]
            # d|x|^p / dx = p |x|^(p - 1) sign(x), weighted by the incoming gradient of each pair
            weighted = diff.abs().pow_(ctx.p - 1).mul_(diff.sign_()).mul_(grad[rows, :, None] * ctx.p)
            grad_a[rows] = weighted.sum(1)
            grad_b -= weighted.sum(0)
        return grad_a, grad_b, None


@registered("vmf")
class VonMisesFisherInfoNCE(ContrastiveLoss):
    """Dot-product similarity of L2-normalised outputs divided by tau (the vMF conditional)."""

    def __init__(self, tau: float = 1.0, include_self: bool = False, negatives: str = "positives") -> None:
        super().__init__(include_self, negatives)
        self.tau = tau

    @classmethod
    def from_options(cls, name: str, *, tau: float, include_self: bool, negatives: str,
                     **_: object) -> VonMisesFisherInfoNCE:
        return cls(tau, include_self, negatives)

    def embed(self, h: torch.Tensor) -> torch.Tensor:
        return F.normalize(h, dim=1)

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b.T / self.tau

    def paired(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b).sum(1) / self.tau


# Lambda as a function of its raw parameter. softplus is the AnInfoNCE code's: far from 0 it is the
# identity, so Adam moves Lambda by about the learning rate per step, ~25,000 steps to go from 1 to 25
# at 1e-3. exp moves log Lambda by about the learning rate per step: scale-free, ~3,200 steps at 1e-3.
PRECISION_MAPS = {"softplus": (F.softplus, lambda v: math.log(math.expm1(v))),
                  "exp": (torch.exp, math.log)}


@registered("aninfonce", "aninfonce-isotropic")
class AnInfoNCE(ContrastiveLoss):
    """Anisotropic InfoNCE: s(a, b) = -1/2 (a - b)^T Lambda (a - b) on L2-normalised outputs,
    with a learnable diagonal Lambda (``precision_map`` of a raw parameter) and no temperature.

    ``isotropic=True`` learns one precision shared by every dimension (Lambda = lambda I): the
    same loss with a learned temperature, i.e. isotropic InfoNCE, the ablation AnInfoNCE is
    compared with on equal footing.
    """

    def __init__(self, dim: int, include_self: bool = False, isotropic: bool = False,
                 negatives: str = "positives", precision_map: str = "softplus",
                 initial_precision: float = 1.0) -> None:
        super().__init__(include_self, negatives)
        if precision_map not in PRECISION_MAPS:
            raise TrainingError(f"unknown precision_map {precision_map!r}; expected one of "
                                f"{', '.join(PRECISION_MAPS)}")
        self.precision_map = precision_map
        forward_map, inverse = PRECISION_MAPS[precision_map]
        self._to_precision = forward_map
        size = 1 if isotropic else dim
        self.raw_precision = nn.Parameter(torch.full((size,), inverse(initial_precision)))

    @classmethod
    def from_options(cls, name: str, *, dim: int, include_self: bool, negatives: str, precision_map: str,
                     **_: object) -> AnInfoNCE:
        return cls(dim, include_self, isotropic=name == "aninfonce-isotropic", negatives=negatives,
                   precision_map=precision_map)

    @property
    def precision(self) -> torch.Tensor:
        return self._to_precision(self.raw_precision)

    def embed(self, h: torch.Tensor) -> torch.Tensor:
        return F.normalize(h, dim=1)

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # -1/2 sum_k Lambda_k (a_k - b_k)^2, expanded so that no (len(a), len(b), d) tensor is built
        weighted_a, weighted_b = a * self.precision, b * self.precision
        return (a @ weighted_b.T - 0.5 * (a * weighted_a).sum(1)[:, None]
                - 0.5 * (b * weighted_b).sum(1)[None, :])

    def paired(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return -0.5 * ((a - b).pow(2) * self.precision).sum(-1)


@registered("mse")
class SupervisedMSE(nn.Module):
    """The topline: regress the anchors' latents directly."""

    @classmethod
    def from_options(cls, name: str, **_: object) -> SupervisedMSE:
        return cls()

    def forward(self, h: torch.Tensor, h_pos: torch.Tensor | None, z: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(h, z)


def build_loss(name: str, *, dim: int, p: float = 2.0, tau: float = 1.0, include_self: bool = False,
               negatives: str = "positives", precision_map: str = "softplus") -> nn.Module:
    if name not in LOSSES:
        raise TrainingError(f"unknown loss {name!r}; expected one of {', '.join(LOSSES)}")
    return LOSSES[name](dim=dim, p=p, tau=tau, include_self=include_self, negatives=negatives,
                        precision_map=precision_map)
