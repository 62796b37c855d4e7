"""DCI: disentanglement, completeness and informativeness (Eastwood and Williams, ICLR 2018).

The importance matrix R (features x latents) holds the absolute coefficients of an elastic-net read-out
(a lasso with a small ridge term: ``ELASTIC_NET_ALPHA``, ``L1_RATIO``) from standardised features to
standardised latents, fitted on the protocol's fit set. The ridge term is what makes completeness
honest: a pure lasso puts all weight on one of two identical features and so cannot see that a latent
is spread over several; the elastic net shares it between them (its grouping effect).

* disentanglement of feature i: 1 - H_K(R_i. / sum_j R_ij), entropy in base K (the number of
  latents); D is their mean weighted by each feature's share of the total importance;
* completeness of latent j: 1 - H_d(R_.j / sum_i R_ij), entropy in base d (the number of features);
  C is their mean weighted by each latent's share (disentanglement_lib's weighting);
* informativeness: R² of the same read-out on the score set (per latent, clipped to [0, 1], and the
  mean), the "explicitness" of DCI-ES (Eastwood et al., ICLR 2023) at this fixed model capacity.

The solver is coordinate descent on the Gram matrix, all latents at once, cycling over the active
features between full sweeps; it stops when no coefficient moves by more than ``TOLERANCE`` in a full
sweep or after ``MAX_SWEEPS`` (the result records which).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident3d.metrics import r2_per_latent

ELASTIC_NET_ALPHA = 0.01
L1_RATIO = 0.5
TOLERANCE = 1e-7
MAX_SWEEPS = 1000


@dataclass(frozen=True)
class ElasticNetFit:
    coef: np.ndarray  # (d features, K latents)
    sweeps: int
    converged: bool


def elastic_net(x: np.ndarray, y: np.ndarray, alpha: float = ELASTIC_NET_ALPHA, l1_ratio: float = L1_RATIO,
                tol: float = TOLERANCE, max_sweeps: int = MAX_SWEEPS) -> ElasticNetFit:
    """Minimise (1/2n)||y - x w||² + alpha (l1_ratio |w|_1 + (1 - l1_ratio)/2 ||w||²) for every column
    of ``y`` (no intercept: pass centred data), as scikit-learn's ``ElasticNet`` defines it."""
    n, d = x.shape
    gram = x.T @ x / n
    gradient = x.T @ y / n  # x'(y - x w)/n, kept current as w changes
    w = [[0.0] * y.shape[1] for _ in range(d)]  # row i: feature i's coefficient for every latent
    l1 = alpha * l1_ratio
    # The loop runs a few hundred thousand times on wide features, where numpy's cost per call on a
    # row of K numbers outweighs the arithmetic: a row's update is done on Python floats (IEEE doubles,
    # the same operations in the same order, so the same bits as the numpy form; tests/
    # test_dci_and_extrapolation.py), and numpy only moves the gradient (a d x K rank-one update).
    diagonal = np.diag(gram).tolist()
    denominator = (np.diag(gram) + alpha * (1.0 - l1_ratio)).tolist()
    columns = [gram[:, i].copy()[:, None] for i in range(d)]
    sweeps, full, active = 0, True, list(range(d))
    while sweeps < max_sweeps:
        sweeps += 1
        largest = 0.0
        for i in range(d) if full else active:
            old, scale, denominator_i = w[i], diagonal[i], denominator[i]
            new = []
            for g, before in zip(gradient[i].tolist(), old, strict=True):
                rho = g + scale * before
                shrunk = abs(rho) - l1  # soft thresholding: sign(rho) max(|rho| - l1, 0) / denominator
                new.append((shrunk if rho > 0 else -shrunk) / denominator_i if shrunk > 0 else 0.0)
            delta = [after - before for after, before in zip(new, old, strict=True)]
            step = max(map(abs, delta))
            if step > 0.0:
                gradient -= columns[i] * np.array(delta)
                w[i] = new
                largest = max(largest, step)
        if largest < tol and full:
            return ElasticNetFit(np.array(w), sweeps, True)
        full = largest < tol  # the active set settled: check every feature again
        active = [i for i in range(d) if any(w[i])]
    return ElasticNetFit(np.array(w), sweeps, False)


def _standardise(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    std = like.std(0)
    return (a - like.mean(0)) / np.where(std > 0, std, 1.0)


def _one_minus_entropy(p: np.ndarray, base: int) -> np.ndarray:
    """1 - H(p) / log(base) per row of a row-stochastic matrix (0 log 0 = 0)."""
    if base < 2:
        return np.ones(len(p))
    logs = np.log(np.where(p > 0, p, 1.0))
    return 1.0 + (p * logs).sum(1) / np.log(base)


def dci(z_fit: np.ndarray, h_fit: np.ndarray, z_score: np.ndarray, h_score: np.ndarray) -> dict:
    """D, C and I of features ``h`` for latents ``z`` (see the module docstring)."""
    x, y = _standardise(h_fit, h_fit), _standardise(z_fit, z_fit)
    fit = elastic_net(x, y)
    importance = np.abs(fit.coef)  # (d, K)
    total = importance.sum()
    d, k = importance.shape
    if total == 0:
        disentanglement = completeness = 0.0
        per_latent_c = np.zeros(k)
    else:
        codes = importance.sum(1)
        used = codes > 0
        per_code = _one_minus_entropy(importance[used] / codes[used, None], k)
        disentanglement = float((per_code * codes[used] / total).sum())
        factors = importance.sum(0)
        per_latent_c = np.zeros(k)
        has = factors > 0
        per_latent_c[has] = _one_minus_entropy((importance[:, has] / factors[has]).T, d)
        completeness = float((per_latent_c * factors / total).sum())
    prediction = _standardise(h_score, h_fit) @ fit.coef * z_fit.std(0) + z_fit.mean(0)
    informativeness = np.clip(r2_per_latent(z_score, prediction), 0.0, 1.0)
    # weighted means of values in [0, 1]: rounding may put a perfect code at 1 + 2e-16
    disentanglement, completeness = (float(np.clip(v, 0.0, 1.0)) for v in (disentanglement, completeness))
    return {"disentanglement": disentanglement, "completeness": completeness,
            "informativeness": float(informativeness.mean()),
            "per_latent": {"completeness": [float(c) for c in np.clip(per_latent_c, 0, 1)],
                           "informativeness": [float(v) for v in informativeness]},
            "importance": "elastic net", "alpha": ELASTIC_NET_ALPHA, "l1_ratio": L1_RATIO,
            "sweeps": fit.sweeps, "converged": fit.converged}
