"""The synthetic processes drawn by torch on the training device (``--device cuda``): the
distributions ``processes.Process`` draws with numpy on the CPU, from a torch Generator seeded by
(seed, step), so a GPU run neither waits for the CPU to draw its batches nor copies them over.

The two samplers share distributions, not streams: a run's pairs depend on which one drew them, so a
result and its checkpoint name their sampler and a run resumes only with its own. Conditionals
truncated to the box are redrawn until inside (the original code's way), where the numpy sampler
inverts the truncated CDF; both give the truncated distribution (tests/test_synthetic_devices.py
compares every process of the tables by two-sample Kolmogorov-Smirnov tests).
"""

from __future__ import annotations

import math

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
        return _von_mises_fisher(g, z, process.scale)
    if process.conditional == "anisotropic-normal":
        return _anisotropic_sphere_normal(g, z, process)
    if process.space == "box":
        return _inside_box(process, g, z)
    positive = z + process.scale * _noise(process, g, tuple(z.shape))
    return _project(positive) if process.space == "sphere" else positive


def _inside_box(process: Process, g: torch.Generator, z: torch.Tensor) -> torch.Tensor:
    """Each coordinate's positive redrawn until it lies in the box."""
    flat, out = z.reshape(-1), torch.empty(z.numel(), dtype=z.dtype, device=z.device)
    todo = torch.arange(z.numel(), device=z.device)
    while len(todo):
        candidate = flat[todo] + process.scale * _noise(process, g, (len(todo),))
        inside = (candidate >= BOX[0]) & (candidate <= BOX[1])
        out[todo[inside]] = candidate[inside]
        todo = todo[~inside]
    return out.reshape(z.shape)


def _von_mises_fisher(g: torch.Generator, mu: torch.Tensor, kappa: float) -> torch.Tensor:
    """Wood's (1994) sampler: the cosine to mu by rejection from a Beta, then a uniform tangent."""
    n, d = mu.shape
    b = (d - 1) / (2 * kappa + math.sqrt(4 * kappa**2 + (d - 1) ** 2))
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (d - 1) * math.log(1 - x0**2)
    w = torch.empty(n, dtype=mu.dtype, device=mu.device)
    todo = torch.arange(n, device=mu.device)
    while len(todo):
        first, second = (_gamma(g, (len(todo),), (d - 1) / 2) for _ in range(2))
        beta = first / (first + second)
        cosine = (1 - (1 + b) * beta) / (1 - (1 - b) * beta)
        log_ratio = kappa * cosine + (d - 1) * torch.log(1 - x0 * cosine) - c
        accept = log_ratio >= torch.log(_uniform(g, (len(todo),)))
        w[todo[accept]] = cosine[accept]
        todo = todo[~accept]
    tangent = _normal(g, (n, d))
    tangent = _project(tangent - (tangent * mu).sum(1, keepdim=True) * mu)
    return w[:, None] * mu + (1 - w**2).clamp(min=0).sqrt()[:, None] * tangent


def _anisotropic_sphere_normal(g: torch.Generator, mu: torch.Tensor, process: Process) -> torch.Tensor:
    """mu plus N(0, diag(1 / precisions)), redrawn until within ``shell`` of the sphere, projected."""
    std = torch.tensor(process.precisions, dtype=mu.dtype, device=mu.device).rsqrt()
    out = torch.empty_like(mu)
    todo = torch.arange(len(mu), device=mu.device)
    while len(todo):
        candidate = mu[todo] + _normal(g, (len(todo), mu.shape[1])) * std
        norm = candidate.norm(dim=1)
        accept = (1 - norm).abs() < process.shell
        out[todo[accept]] = candidate[accept] / norm[accept, None]
        todo = todo[~accept]
    return out
