"""ident3d.metrics against scikit-learn (a test-only dependency) on the same arrays: linear R², the
per-latent R² (a constant latent included) and the kernel ridge search."""

from __future__ import annotations

import numpy as np
import pytest

from ident3d import metrics

sklearn = pytest.importorskip("sklearn")
from sklearn.kernel_ridge import KernelRidge  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402


def mixed(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.uniform(-1, 1, (n, 4))
    h = np.tanh(z @ rng.normal(size=(4, 6))) + 0.1 * rng.normal(size=(n, 6))
    return z, h


def test_per_latent_r2_is_r2_score_with_raw_outputs_constant_columns_included():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(50, 4))
    z[:, 2] = 0.5  # constant: predicted wrongly below
    z[:, 3] = -1.0  # constant: predicted exactly below
    prediction = z + 0.3 * rng.normal(size=z.shape)
    prediction[:, 3] = -1.0
    ours = metrics.r2_per_latent(z, prediction)
    theirs = r2_score(z, prediction, multioutput="raw_values")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    assert ours[2] == 0.0 and ours[3] == 1.0


def test_linear_r2_is_linear_regression_then_r2_score():
    z, h = mixed(400, 1)
    fit, score = slice(0, 200), slice(200, None)
    ours = metrics.linear_r2(z[fit], h[fit], z[score], h[score])
    prediction = LinearRegression().fit(h[fit], z[fit]).predict(h[score])
    np.testing.assert_allclose(ours, r2_score(z[score], prediction, multioutput="raw_values"),
                               rtol=0, atol=1e-12)


def test_kernel_ridge_search_is_grid_search_cv_with_the_same_folds():
    z, h = mixed(300, 2)
    fit, score = slice(0, 150), slice(150, None)
    ours, chosen = metrics.nonlinear_r2(z[fit], h[fit], z[score], h[score], seed=0)
    # the same standardisation, subsample and folds as ident3d.metrics, then scikit-learn's search
    mean, std = h[fit].mean(0), h[fit].std(0)
    a, b = (h[fit] - mean) / std, (h[score] - mean) / std
    rng = np.random.default_rng(0)
    pick = rng.permutation(len(a))[:metrics.KERNEL_SUBSAMPLE]
    a, y = a[pick], z[fit][pick]
    folds = np.array_split(rng.permutation(len(a)), metrics.KERNEL_FOLDS)
    splits = [(np.setdiff1d(np.arange(len(a)), fold), fold) for fold in folds]
    d = a.shape[1]
    grid = {"alpha": list(metrics.KERNEL_ALPHAS), "gamma": [g / d for g in metrics.KERNEL_GAMMAS]}
    for j in range(z.shape[1]):
        # ident3d centres the targets on each training fold; KernelRidge has no intercept, so the
        # centring is given to it as the target's fold mean, which is what centring does
        search = GridSearchCV(CentredKernelRidge(kernel="rbf"), grid, cv=splits, scoring="r2").fit(a, y[:, j])
        assert search.best_params_["alpha"] == chosen[j]["alpha"]
        assert search.best_params_["gamma"] == pytest.approx(chosen[j]["gamma"] / d)
        theirs = r2_score(z[score][:, j], search.predict(b))
        assert ours[j] == pytest.approx(theirs, abs=1e-4)


class CentredKernelRidge(KernelRidge):
    """Kernel ridge on targets centred with their training mean (ident3d's read-out)."""

    def fit(self, x, y, sample_weight=None):
        self.offset_ = float(np.mean(y))
        return super().fit(x, y - self.offset_, sample_weight)

    def predict(self, x):
        return super().predict(x) + self.offset_
