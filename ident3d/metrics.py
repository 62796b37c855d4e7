"""Identifiability metrics as pure functions of arrays: z (N, k) true latents, h (N, d) features.

* linear R^2: least squares from h to z with intercept, fitted on one set and scored on another
  (Zimmermann et al., ICML 2021, section 6);
* nonlinear R^2: RBF kernel ridge regression on standardised h with a fixed grid and 3-fold CV on
  a fixed subsample (the grid of the Causal3DIdent and Multimodal3DIdent papers), chosen per latent;
* MCC: mean absolute correlation after Hungarian matching of latents to feature dimensions
  (``scipy.optimize.linear_sum_assignment``), with Pearson or Spearman correlation;
* class accuracy: a multinomial logistic read-out of a discrete latent (object class).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, lstsq
from scipy.optimize import linear_sum_assignment, minimize

from ident3d.lapack import cholesky_solve
from ident3d.parallel_fits import InOrder

KERNEL_ALPHAS = (1.0, 0.1, 0.01, 0.001)
KERNEL_GAMMAS = tuple(np.logspace(-2, 2, 4))  # on standardised features, divided by d below
KERNEL_SUBSAMPLE = 4000
KERNEL_FOLDS = 3


def constant_columns(z: np.ndarray) -> np.ndarray:
    """Which columns hold one value only, decided from the values themselves (never from a variance,
    which for a constant whose mean is not exact in floating point is rounding noise)."""
    return z.max(0) == z.min(0)


def r2_per_latent(z: np.ndarray, prediction: np.ndarray) -> np.ndarray:
    """Coefficient of determination per column (sklearn's ``r2_score`` with raw outputs). A constant
    column (see ``constant_columns``) scores 1 when predicted exactly and 0 otherwise, as in
    scikit-learn."""
    residual = ((z - prediction) ** 2).sum(0)
    total = ((z - z.mean(0)) ** 2).sum(0)
    constant = constant_columns(z)
    exact = np.where(residual == 0, 1.0, 0.0)
    return np.where(constant, exact, 1.0 - residual / np.where(constant, 1.0, total))


def latent_variance(z: np.ndarray) -> np.ndarray:
    """Variance of each column, exactly 0 for a constant column (``constant_columns``): the rounded
    variance of a constant is about 1e-33, and an R² against it would read that noise."""
    return np.where(constant_columns(z), 0.0, z.var(0))


@dataclass(frozen=True)
class AffineReadout:
    """The affine least-squares read-out of targets from features, fitted once and applied to any set."""

    coef: np.ndarray  # (d + 1, targets): the weights, then the intercept

    @classmethod
    def fit(cls, h_fit: np.ndarray, y_fit: np.ndarray) -> AffineReadout:
        design = np.hstack([h_fit, np.ones((len(h_fit), 1))]).astype(np.float64)
        # numpy's cut-off for a zero singular value; scipy's LAPACK, as every other solve here (one BLAS
        # thread pool: numpy's and scipy's pools, alternating, wait on each other's idle threads)
        cutoff = np.finfo(np.float64).eps * max(design.shape)
        return cls(lstsq(design, y_fit.astype(np.float64), cond=cutoff, lapack_driver="gelss")[0])

    def predict(self, h: np.ndarray) -> np.ndarray:
        return np.hstack([h, np.ones((len(h), 1))]) @ self.coef


def affine_predict(h_fit: np.ndarray, y_fit: np.ndarray, h_score: np.ndarray) -> np.ndarray:
    """Predictions on ``h_score`` of the affine least-squares read-out from ``h_fit`` to ``y_fit``."""
    return AffineReadout.fit(h_fit, y_fit).predict(h_score)


def linear_r2(z_fit: np.ndarray, h_fit: np.ndarray, z_score: np.ndarray,
              h_score: np.ndarray) -> np.ndarray:
    """Per-latent R^2 of an affine least-squares read-out fitted on the fit set."""
    return r2_per_latent(z_score.astype(np.float64), affine_predict(h_fit, z_fit, h_score))


def _squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of ``a`` and ``b`` as one matrix product
    (|a|² + |b|² - 2 a·b, at least 0): for features of many dimensions far faster than a loop over
    pairs, and equal to it within rounding."""
    out = a @ b.T
    out *= -2.0
    out += (a * a).sum(1)[:, None]
    out += (b * b).sum(1)[None, :]
    return np.maximum(out, 0.0, out=out)


def _rbf_of(squared_distances: np.ndarray, gamma: float) -> np.ndarray:
    return np.exp(-gamma * squared_distances)


def _regularised(kernel: np.ndarray, alpha: float) -> np.ndarray:
    """kernel + alpha * I, in Fortran order (LAPACK's, so the factorisation needs no further copy)."""
    k = np.array(kernel, order="F")
    k[np.diag_indices_from(k)] += alpha  # the same bits as kernel + alpha * I: x + 0.0 is x off the diagonal
    return k


def _ridge_solve(kernel: np.ndarray, targets: np.ndarray, alpha: float) -> np.ndarray:
    try:  # factorised in place, without the GIL: ridge fits of a protocol run side by side
        return cholesky_solve(_regularised(kernel, alpha), targets)
    except LinAlgError:  # numerically singular for tiny alpha: fall back to least squares
        return np.linalg.lstsq(_regularised(kernel, alpha), targets, rcond=None)[0]


@dataclass(frozen=True)
class KernelReadout:
    """RBF kernel ridge read-outs of several targets from one fit set, each target with its own
    (alpha, gamma): features standardised with fit-set statistics, gamma given per feature dimension
    (``gamma / d``), at most ``KERNEL_SUBSAMPLE`` fit points drawn with ``seed``. Fitted once and
    applied to any set (the score rows, an OOD split, a fresh draw); targets that share a choice
    share one kernel matrix and one factorisation, and every prediction one distance matrix."""

    mean: np.ndarray
    std: np.ndarray
    points: np.ndarray  # the standardised fit points the kernels are centred on
    offset: np.ndarray  # each target's mean over the points
    groups: tuple[tuple[float, np.ndarray, np.ndarray], ...]  # (gamma / d, target columns, dual coefficients)

    @classmethod
    def fit(cls, h_fit: np.ndarray, y_fit: np.ndarray, chosen: list[dict[str, float]], seed: int = 0
            ) -> KernelReadout:
        """Fit target ``j`` of ``y_fit`` (n, targets) with ``chosen[j]``'s alpha and gamma."""
        mean, std = h_fit.mean(0), h_fit.std(0)
        std = np.where(std > 0, std, 1.0)
        pick = np.random.default_rng(seed).permutation(len(h_fit))[:KERNEL_SUBSAMPLE]
        points, y = (h_fit[pick] - mean) / std, y_fit[pick].astype(np.float64)
        distances, offset, d = _squared_distances(points, points), y.mean(0), points.shape[1]
        by_choice: dict[tuple[float, float], list[int]] = {}
        for j, choice in enumerate(chosen):
            by_choice.setdefault((choice["alpha"], choice["gamma"]), []).append(j)
        groups = tuple((gamma / d, np.array(columns),
                        _ridge_solve(_rbf_of(distances, gamma / d), y[:, columns] - offset[columns], alpha))
                       for (alpha, gamma), columns in by_choice.items())
        return cls(mean, std, points, offset, groups)

    def predict(self, h: np.ndarray) -> np.ndarray:
        distances = _squared_distances((h - self.mean) / self.std, self.points)
        out = np.empty((len(h), len(self.offset)))
        for gamma, columns, coef in self.groups:
            out[:, columns] = _rbf_of(distances, gamma) @ coef + self.offset[columns]
        return out


def choose_kernels(z_fit: np.ndarray, h_fit: np.ndarray, seed: int = 0, pool: Executor | None = None
                   ) -> list[dict[str, float]]:
    """The (alpha, gamma) of each latent's kernel read-out: the grid point with the best
    ``KERNEL_FOLDS``-fold cross-validated R² on the fit points ``KernelReadout`` uses. Each fold and
    gamma is a task of ``pool`` (``ident3d.parallel_fits``; none: one after the other)."""
    mean, std = h_fit.mean(0), h_fit.std(0)
    std = np.where(std > 0, std, 1.0)
    rng = np.random.default_rng(seed)
    pick = rng.permutation(len(h_fit))[:KERNEL_SUBSAMPLE]  # the draw KernelReadout.fit makes
    a, y = (h_fit[pick] - mean) / std, z_fit[pick].astype(np.float64)
    d = a.shape[1]
    folds = np.array_split(rng.permutation(len(a)), KERNEL_FOLDS)
    fit_distances = _squared_distances(a, a)  # once: every fold and gamma reads blocks of it
    blocks = []  # per fold: its training rows, and the distances the fold's kernels are made of
    for fold in folds:
        train = np.setdiff1d(np.arange(len(a)), fold)
        blocks.append((fold, train, fit_distances[np.ix_(train, train)], fit_distances[np.ix_(fold, train)]))

    def fold_scores(f: int, gamma: float) -> np.ndarray:
        """The R² of every latent on fold ``f`` for each alpha at this gamma, (alphas, latents)."""
        fold, train, train_distances, test_distances = blocks[f]
        k_train, k_test = _rbf_of(train_distances, gamma / d), _rbf_of(test_distances, gamma / d)
        y_mean = y[train].mean(0)
        coefs = (_ridge_solve(k_train, y[train] - y_mean, alpha) for alpha in KERNEL_ALPHAS)
        return np.array([r2_per_latent(y[fold], k_test @ coef + y_mean) for coef in coefs])

    tasks = [(f, g) for f in range(len(folds)) for g in range(len(KERNEL_GAMMAS))]
    scores = (pool or InOrder()).map(lambda task: fold_scores(task[0], KERNEL_GAMMAS[task[1]]), tasks)
    cv = np.zeros((len(KERNEL_GAMMAS), len(KERNEL_ALPHAS), y.shape[1]))
    for (_, g), fold_r2 in zip(tasks, scores, strict=True):
        cv[g] += fold_r2  # fold by fold, in the folds' order: the same sums on any schedule
    grid = [(alpha, gamma) for gamma in KERNEL_GAMMAS for alpha in KERNEL_ALPHAS]
    return [{"alpha": grid[c][0], "gamma": float(grid[c][1])} for c in cv.reshape(len(grid), -1).argmax(0)]


def nonlinear_r2(z_fit: np.ndarray, h_fit: np.ndarray, z_score: np.ndarray, h_score: np.ndarray,
                 seed: int = 0) -> tuple[np.ndarray, list[dict[str, float]]]:
    """Per-latent R^2 of RBF kernel ridge regression and the (alpha, gamma) chosen per latent
    (``choose_kernels``, then ``KernelReadout`` fitted on the fit set and scored on the score set)."""
    chosen = choose_kernels(z_fit, h_fit, seed)
    prediction = KernelReadout.fit(h_fit, z_fit, chosen, seed).predict(h_score)
    return r2_per_latent(z_score.astype(np.float64), prediction), chosen


@dataclass(frozen=True)
class Readouts:
    """The protocol's two read-outs of some latents, affine and kernel, fitted on one set of rows."""

    linear: AffineReadout
    kernel: KernelReadout

    @classmethod
    def fit(cls, h_fit: np.ndarray, y_fit: np.ndarray, chosen: list[dict[str, float]], seed: int = 0
            ) -> Readouts:
        return cls(AffineReadout.fit(h_fit, y_fit), KernelReadout.fit(h_fit, y_fit, chosen, seed))

    def transfer_r2(self, h_score: np.ndarray, y_score: np.ndarray, variance: np.ndarray
                    ) -> list[tuple[float, float]]:
        """Linear and kernel R² per target on ``(h_score, y_score)``, a set elsewhere in the latent space:
        ``1 - MSE / variance`` against a given ``variance`` per target (the latent's over the whole
        in-distribution score set, so a score on a narrow region reads on the usual R² scale), clipped
        to [0, 1]; an empty set or a target without variance scores 0."""
        if len(y_score) == 0:
            return [(0.0, 0.0)] * len(variance)
        linear, nonlinear = self.linear.predict(h_score), self.kernel.predict(h_score)
        return [(0.0, 0.0) if v <= 0 else (_bounded_r2(y_score[:, j], linear[:, j], v),
                                           _bounded_r2(y_score[:, j], nonlinear[:, j], v))
                for j, v in enumerate(variance)]


def _bounded_r2(y: np.ndarray, prediction: np.ndarray, variance: float) -> float:
    """``1 - MSE / variance`` clipped to [0, 1]; a prediction with no finite error (features so far out
    that the read-out returns inf - inf) scores 0, like any prediction worse than the mean."""
    with np.errstate(invalid="ignore", over="ignore"):
        r2 = 1.0 - np.mean((y - prediction) ** 2) / variance
    return 0.0 if np.isnan(r2) else float(np.clip(r2, 0.0, 1.0))


def average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks along axis 0 from 1, tied values sharing the average of their ranks, a column with a NaN
    all NaN: ``scipy.stats.rankdata(a, axis=0)``, the same numbers (tests/test_metrics.py), without
    importing scipy.stats, which takes about a second of every evaluation's start."""
    a = np.asarray(a, dtype=np.float64)
    order = np.argsort(a, axis=0, kind="stable")
    ordered = np.take_along_axis(a, order, axis=0)
    position = np.broadcast_to(np.arange(len(a)).reshape(-1, *[1] * (a.ndim - 1)), a.shape)
    new = np.ones(a.shape, dtype=bool)  # where a run of equal values starts, in sorted order
    new[1:] = ordered[1:] != ordered[:-1]
    last = np.ones(a.shape, dtype=bool)  # where one ends
    last[:-1] = new[1:]
    first_of_run = np.maximum.accumulate(np.where(new, position, 0), axis=0)
    last_of_run = np.flip(np.minimum.accumulate(np.flip(np.where(last, position, len(a) - 1), 0), axis=0), 0)
    ranks = np.empty(a.shape)
    np.put_along_axis(ranks, order, 0.5 * (first_of_run + last_of_run + 2), axis=0)
    return np.where(np.isnan(a).any(axis=0), np.nan, ranks)


def correlation_matrix(z: np.ndarray, h: np.ndarray, method: str = "pearson") -> np.ndarray:
    """(k, d) correlations between every latent and every feature; constant columns give 0."""
    if method == "spearman":
        z, h = average_ranks(z), average_ranks(h)
    elif method != "pearson":
        raise ValueError(f"correlation method must be 'pearson' or 'spearman', got {method!r}")
    zc = z - z.mean(0)
    hc = h - h.mean(0)
    zn = np.linalg.norm(zc, axis=0)
    hn = np.linalg.norm(hc, axis=0)
    rho = (zc.T @ hc) / np.outer(np.where(zn > 0, zn, np.inf), np.where(hn > 0, hn, np.inf))
    return np.clip(rho, -1.0, 1.0)


def match_latents(rho: np.ndarray) -> np.ndarray:
    """Feature index matched to each latent (-1 when d < k leaves it unmatched)."""
    rows, cols = linear_sum_assignment(-np.abs(rho))
    assignment = np.full(rho.shape[0], -1)
    assignment[rows] = cols
    return assignment


def mcc(z: np.ndarray, h: np.ndarray, method: str = "pearson",
        assignment: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-latent matched |correlation| and the assignment used.

    With ``assignment`` given (for example found on a fit set), it is applied as is; otherwise the
    Hungarian matching is found on (z, h). Unmatched latents (d < k) score 0.
    """
    rho = correlation_matrix(np.asarray(z, np.float64), np.asarray(h, np.float64), method)
    if assignment is None:
        assignment = match_latents(rho)
    per_latent = np.where(assignment >= 0,
                          np.abs(rho[np.arange(len(rho)), np.maximum(assignment, 0)]), 0.0)
    return per_latent, assignment


# Resamples are scored a stack at a time, laid out (rows, resamples, latents): a sum over the rows then
# adds whole rows of the stack one after the other, the same additions in the same order as for one
# resample alone (numpy sums an axis-0 reduction row by row), in a fraction of the calls.
BOOTSTRAP_CHUNK = 32


def bootstrap_r2(z: np.ndarray, prediction: np.ndarray, rows: np.ndarray, clip_each: bool) -> np.ndarray:
    """Mean R² of a fixed read-out's ``prediction`` of ``z`` on each resample of ``rows`` ((B, n)
    row indices): per-latent values clipped to [0, 1] before the mean with ``clip_each``
    (``ident3d-eval-v1``), else the raw mean clipped after (``cl-ica-2021``)."""
    out = np.empty(len(rows))
    for start in range(0, len(rows), BOOTSTRAP_CHUNK):
        pick = rows[start:start + BOOTSTRAP_CHUNK].T  # (n, resamples): see BOOTSTRAP_CHUNK
        per = r2_per_latent(z[pick], prediction[pick])  # (resamples, latents)
        out[start:start + pick.shape[1]] = (np.clip(per, 0.0, 1.0).mean(-1) if clip_each
                                            else np.clip(per.mean(-1), 0.0, 1.0))
    return out


def bootstrap_mcc(z: np.ndarray, h: np.ndarray, assignment: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mean matched |Pearson correlation| with the matching held fixed, on each resample of
    ``rows`` ((B, n) row indices); an unmatched latent counts 0. Each latent's correlation with its
    matched feature alone is computed (``mcc`` takes it from the whole correlation matrix, a matrix
    product that adds in another order: the two agree to rounding, about 1e-16)."""
    matched = h[:, np.maximum(assignment, 0)]
    out = np.empty(len(rows))
    for start in range(0, len(rows), BOOTSTRAP_CHUNK):
        pick = rows[start:start + BOOTSTRAP_CHUNK].T  # (n, resamples): see BOOTSTRAP_CHUNK
        zc, hc = z[pick], matched[pick]  # (n, resamples, latents)
        zc -= zc.mean(0)
        hc -= hc.mean(0)
        zn, hn = np.sqrt((zc * zc).sum(0)), np.sqrt((hc * hc).sum(0))
        rho = (zc * hc).sum(0) / (np.where(zn > 0, zn, np.inf) * np.where(hn > 0, hn, np.inf))
        rho = np.abs(np.clip(rho, -1.0, 1.0))
        out[start:start + pick.shape[1]] = np.where(assignment >= 0, rho, 0.0).mean(-1)
    return out


# Ranks take few values, so a permuted ranking often correlates exactly as much as the observed one; the
# two are computed in different orders, and this absorbs their rounding (a tie counts as at least as far).
TIE_TOLERANCE = 1e-12


def rank_agreement(truth: np.ndarray, values: np.ndarray, seed: int = 0,
                   permutations: int = 10_000) -> dict[str, float | list[float]]:
    """Spearman correlation of ``values`` with ``truth``, the 95% interval of that correlation when
    ``values`` are randomly permuted (the null of no agreement), and the two-sided permutation p."""
    from scipy.stats import rankdata, spearmanr  # scipy.stats is slow to import: only here

    rho = float(spearmanr(truth, values).statistic)
    rng = np.random.default_rng(seed)
    # Spearman's rho is Pearson's r of the (average) ranks, and permuting values permutes their ranks:
    # each null draw is one product with the centred ranks (the permutations spearmanr was given).
    t = rankdata(truth) - (len(truth) + 1) / 2
    r = rankdata(values) - (len(values) + 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant input has no correlation (nan)
        null = np.stack([rng.permutation(r) for _ in range(permutations)]) @ t / np.sqrt((t @ t) * (r @ r))
    low, high = np.nanquantile(null, [0.025, 0.975])
    return {"spearman": rho, "null_95": [float(low), float(high)],
            "p_value": float((np.sum(np.abs(null) >= abs(rho) - TIE_TOLERANCE) + 1) / (permutations + 1))}


def spearman_ceiling(truth: np.ndarray) -> float:
    """The largest Spearman correlation any strict ranking reaches with ``truth``: 1 unless ``truth``
    has ties, which a ranking without ties cannot match exactly."""
    from scipy.stats import rankdata, spearmanr  # scipy.stats is slow to import: only here

    return float(spearmanr(truth, rankdata(truth, method="ordinal")).statistic)


def class_accuracy(c_fit: np.ndarray, h_fit: np.ndarray, c_score: np.ndarray, h_score: np.ndarray,
                   n_classes: int, l2: float = 1e-3) -> float:
    """Accuracy of a multinomial logistic read-out of the class from the features.

    Features are standardised on the fit set; the softmax weights (with intercept) minimise the mean
    cross-entropy plus ``l2`` times their squared norm, by L-BFGS from zero (deterministic).
    """
    mean, std = h_fit.mean(0), h_fit.std(0)
    std = np.where(std > 0, std, 1.0)

    def design(h: np.ndarray) -> np.ndarray:
        return np.hstack([(h - mean) / std, np.ones((len(h), 1))])

    x, labels = design(np.asarray(h_fit, np.float64)), np.asarray(c_fit).astype(int)
    onehot = np.eye(n_classes)[labels]
    shape = (x.shape[1], n_classes)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        w = w.reshape(shape)
        logits = x @ w
        logits -= logits.max(1, keepdims=True)
        log_p = logits - np.log(np.exp(logits).sum(1, keepdims=True))
        value = -(onehot * log_p).sum() / len(x) + l2 * (w[:-1] ** 2).sum()
        grad = x.T @ (np.exp(log_p) - onehot) / len(x)
        grad[:-1] += 2 * l2 * w[:-1]
        return value, grad.ravel()

    w = minimize(loss, np.zeros(np.prod(shape)), jac=True, method="L-BFGS-B",
                 options={"maxiter": 500}).x.reshape(shape)
    predicted = (design(np.asarray(h_score, np.float64)) @ w).argmax(1)
    return float((predicted == np.asarray(c_score).astype(int)).mean())


def clipped_mean(r2_per_latent: np.ndarray | list[float]) -> float:
    """The mean over latents of held-out R² clipped at 0 per latent, as the evaluator's protocols
    clip it: a held-out fit can score far below 0 on one latent (-526.6 on one of T1.7's), where the
    original's in-sample fit cannot go below 0, and one such latent would swamp the mean."""
    return float(np.mean(np.maximum(np.asarray(r2_per_latent, dtype=np.float64), 0.0)))
