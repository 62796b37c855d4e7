"""The synthetic processes drawn by torch on the training device (``--device cuda``): the
distributions ``processes.Process`` draws with numpy on the CPU, from a torch Generator seeded by
(seed, step), so a GPU run neither waits for the CPU to draw its batches nor copies them over.

The two samplers share distributions, not streams: a run's pairs depend on which one drew them, so a
result and its checkpoint name their sampler and a run resumes only with its own. Conditionals
truncated to the box are redrawn until inside (the original code's way), where the numpy sampler
inverts the truncated CDF; both give the truncated distribution (tests/test_synthetic_devices.py
compares every process of the tables by two-sample Kolmogorov-Smirnov tests). Every rejection sampler
here has fixed shapes (a fixed number of proposals per draw, chosen by masks), so no step waits for
the host: a test counts the operators that would make it wait.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from ident3d.baselines.synthetic.processes import BOX, Process

STEP_BITS = 32  # a run's step fits in the low bits of its generator's seed


def step_generator(device: torch.device, seed: int, step: int) -> torch.Generator:
    """The generator of step ``step`` of seed ``seed``: a pure function of the two, so a run resumes
    without sampler state."""
    return torch.Generator(device).manual_seed((seed << STEP_BITS) + step)


def pairs(process: Process, generator: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` latents and a positive of each, float64 on the generator's device."""
    z = marginal(process, generator, n)
    return z, conditional(process, generator, z)


def _uniform(g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.rand(shape, generator=g, device=g.device, dtype=torch.float64)


def _normal(g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randn(shape, generator=g, device=g.device, dtype=torch.float64)


def _laplace(g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    """Standard Laplace by its inverse CDF (b = 1)."""
    u = _uniform(g, shape) - 0.5
    return -torch.sign(u) * torch.log1p(-(2 * u.abs()).clamp(max=1 - 2**-52))


def _gamma(g: torch.Generator, shape: tuple[int, ...], concentration: float) -> torch.Tensor:
    # torch.distributions.Gamma draws from the global generator; its kernel takes ours
    return torch._standard_gamma(torch.full(shape, concentration, dtype=torch.float64, device=g.device),
                                 generator=g)


def _gennorm(g: torch.Generator, shape: tuple[int, ...], beta: float) -> torch.Tensor:
    """Density proportional to exp(-|x|^beta): |x|^beta is Gamma(1/beta), the sign a fair coin."""
    sign = torch.where(_uniform(g, shape) < 0.5, -1.0, 1.0)
    return sign * _gamma(g, shape, 1 / beta) ** (1 / beta)


def _project(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def marginal(process: Process, g: torch.Generator, n: int) -> torch.Tensor:
    shape = (n, process.dim)
    if process.space == "box":
        return BOX[0] + (BOX[1] - BOX[0]) * _uniform(g, shape)
    if process.space == "sphere":
        x = _normal(g, shape)
        if process.marginal == "normal":  # around the first axis, then projected (as main_mlp.py)
            x = process.marginal_scale * x
            x[:, 0] += 1.0
        return _project(x)
    noise = _normal if process.marginal == "normal" else _laplace
    return noise(g, shape) * process.marginal_scale


def _noise(process: Process, g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    if process.conditional == "gennorm":
        return _gennorm(g, shape, float(process.beta))
    return (_normal if process.conditional == "normal" else _laplace)(g, shape)


def conditional(process: Process, g: torch.Generator, z: torch.Tensor) -> torch.Tensor:
    if process.conditional == "vmf":
        return _von_mises_fisher(g, z, process)
    if process.conditional == "anisotropic-normal":
        return _anisotropic_sphere_normal(g, z, process)
    if process.space == "box":
        return _inside_box(process, g, z)
    positive = z + process.scale * _noise(process, g, tuple(z.shape))
    return _project(positive) if process.space == "sphere" else positive


# Rejection with fixed shapes: every draw gets the same number of proposals, in rounds of at most
# PER_ROUND, and takes its first accepted one by masks, so no step waits for the host to learn how many
# were accepted. The number comes from the proposal's acceptance on a pilot batch (once per process, on
# the CPU) so that a draw has every proposal rejected with probability below FAILURE; such a draw takes
# its last proposal.
FAILURE = 1e-15
PER_ROUND = 16
PILOT = 4096
MARGIN = 0.5  # the pilot's acceptance is halved: a box conditional at the box's edge accepts at least
#               half as often as on average, and the pilot's estimate is itself uncertain

Proposals = Callable[[int], tuple[torch.Tensor, torch.Tensor]]  # k -> (k, n, ...) candidates, (k, n) mask


def _rejection(draw: Proposals, proposals: int) -> torch.Tensor:
    """Each draw's first accepted candidate among ``proposals`` (its last one when none was accepted),
    drawn in rounds of at most ``PER_ROUND``."""
    out = done = None
    for start in range(0, proposals, PER_ROUND):
        candidates, accepted = draw(min(PER_ROUND, proposals - start))
        any_accepted = accepted.any(0)
        first = torch.where(any_accepted, accepted.to(torch.uint8).argmax(0), len(accepted) - 1)
        index = first.reshape(1, -1, *([1] * (candidates.dim() - 2))).expand(1, *candidates.shape[1:])
        chosen = candidates.gather(0, index)[0]
        if out is None:
            out, done = chosen, any_accepted
        else:
            out = torch.where(done.reshape(-1, *([1] * (chosen.dim() - 1))), out, chosen)
            done = done | any_accepted
    return out


@functools.cache
def proposals_for(process: Process) -> int:
    """Proposals per draw that keep a draw's chance of every one being rejected below ``FAILURE``, from
    the acceptance of one proposal per draw on a pilot batch from a fixed seed: a function of the
    process only, so a run's pairs stay a function of (seed, step)."""
    g = torch.Generator("cpu").manual_seed(0)
    _, accepted = _proposals(process, g, marginal(process, g, PILOT))(1)
    rate = MARGIN * float(accepted.double().mean())
    if rate <= 0:
        raise ValueError(f"{process}: no proposal of a pilot batch of {PILOT} was accepted")
    return 1 if rate >= 1 else math.ceil(math.log(FAILURE) / math.log1p(-rate))


def _proposals(process: Process, g: torch.Generator, z: torch.Tensor) -> Proposals:
    """The rejection sampler's proposals of ``process``'s conditional around ``z`` (n, dim)."""
    if process.conditional == "vmf":
        return _vmf_proposals(g, z, process.scale)
    if process.conditional == "anisotropic-normal":
        std = torch.tensor(process.precisions, dtype=z.dtype, device=z.device).rsqrt()

        def shell(k: int) -> tuple[torch.Tensor, torch.Tensor]:
            candidates = z + _normal(g, (k, *z.shape)) * std
            norm = candidates.norm(dim=2)
            return candidates / norm[..., None], (1 - norm).abs() < process.shell

        return shell
    flat = z.reshape(-1)

    def box(k: int) -> tuple[torch.Tensor, torch.Tensor]:
        candidates = flat + process.scale * _noise(process, g, (k, len(flat)))
        return candidates, (candidates >= BOX[0]) & (candidates <= BOX[1])

    return box


def _inside_box(process: Process, g: torch.Generator, z: torch.Tensor) -> torch.Tensor:
    """Each coordinate's positive redrawn until it lies in the box (the original's rule); one whose
    every proposal fell outside (probability below ``FAILURE``) is clipped to the box."""
    out = _rejection(_proposals(process, g, z), proposals_for(process))
    return out.clamp(BOX[0], BOX[1]).reshape(z.shape)


def _vmf_proposals(g: torch.Generator, mu: torch.Tensor, kappa: float) -> Proposals:
    """Wood's (1994) proposal for the cosine to mu, a transformed Beta, and its acceptance test."""
    n, d = mu.shape
    b = (d - 1) / (2 * kappa + math.sqrt(4 * kappa**2 + (d - 1) ** 2))
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (d - 1) * math.log(1 - x0**2)

    def cosines(k: int) -> tuple[torch.Tensor, torch.Tensor]:
        first, second = (_gamma(g, (k, n), (d - 1) / 2) for _ in range(2))
        beta = first / (first + second)
        cosine = (1 - (1 + b) * beta) / (1 - (1 - b) * beta)
        log_ratio = kappa * cosine + (d - 1) * torch.log(1 - x0 * cosine) - c
        return cosine, log_ratio >= torch.log(_uniform(g, (k, n)))

    return cosines


def _von_mises_fisher(g: torch.Generator, mu: torch.Tensor, process: Process) -> torch.Tensor:
    """Wood's (1994) sampler: the cosine to mu by rejection from a Beta, then a uniform tangent."""
    n, d = mu.shape
    w = _rejection(_proposals(process, g, mu), proposals_for(process))
    tangent = _normal(g, (n, d))
    tangent = _project(tangent - (tangent * mu).sum(1, keepdim=True) * mu)
    return w[:, None] * mu + (1 - w**2).clamp(min=0).sqrt()[:, None] * tangent


def _anisotropic_sphere_normal(g: torch.Generator, mu: torch.Tensor, process: Process) -> torch.Tensor:
    """mu plus N(0, diag(1 / precisions)), redrawn until within ``shell`` of the sphere, projected."""
    return _rejection(_proposals(process, g, mu), proposals_for(process))
