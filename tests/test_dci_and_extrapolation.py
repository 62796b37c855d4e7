"""DCI (ident3d.dci), read-out extrapolation (ident3d.extrapolation) and block identifiability behave as
their definitions say on inputs whose answer is known, and the elastic net is scikit-learn's."""

import numpy as np
import pytest

from ident3d import metrics
from ident3d.dci import ELASTIC_NET_ALPHA, L1_RATIO, dci, elastic_net
from ident3d.extrapolation import readout_extrapolation
from ident3d.protocols import block_scores

RNG = np.random.default_rng(7)
Z = RNG.uniform(-1, 1, (3000, 10))
FIT, SCORE = slice(0, 1500), slice(1500, None)
NAMES = [f"z{j}" for j in range(10)]


def scores(h):
    return dci(Z[FIT], h[FIT], Z[SCORE], h[SCORE])


def test_true_latents_are_perfectly_disentangled_and_complete():
    result = scores(Z.copy())
    assert result["disentanglement"] == pytest.approx(1.0, abs=1e-12)
    assert result["completeness"] == pytest.approx(1.0, abs=1e-12)
    assert result["informativeness"] > 0.999 and result["converged"]


def test_a_perfect_code_scores_at_most_one_whatever_the_rounding():
    """The result schema bounds D and C by 1; weighted means of ones can round to 1 + 2e-16."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        h = Z[:, rng.permutation(10)] * rng.uniform(0.5, 2.0, 10)
        result = scores(h)
        assert 1.0 - 1e-12 <= result["disentanglement"] <= 1.0
        assert 1.0 - 1e-12 <= result["completeness"] <= 1.0


def test_a_rotation_keeps_information_but_loses_disentanglement():
    rotation, _ = np.linalg.qr(RNG.normal(size=(10, 10)))
    result = scores(Z @ rotation)
    assert result["disentanglement"] < 0.4 and result["completeness"] < 0.4
    assert result["informativeness"] > 0.99


def test_duplicated_features_lower_completeness_only():
    result = scores(np.hstack([Z, Z]))
    assert result["disentanglement"] == pytest.approx(1.0, abs=1e-9)
    assert result["completeness"] == pytest.approx(1 - np.log(2) / np.log(20), abs=0.01)  # split in two


def test_noise_is_not_informative():
    assert scores(RNG.normal(size=Z.shape))["informativeness"] < 0.01


def test_elastic_net_is_scikit_learns():
    linear_model = pytest.importorskip("sklearn.linear_model")
    h = np.tanh(Z @ RNG.normal(size=(10, 30))) + 0.05 * RNG.normal(size=(3000, 30))
    x = (h - h.mean(0)) / h.std(0)
    y = (Z - Z.mean(0)) / Z.std(0)
    ours = elastic_net(x, y, tol=1e-10, max_sweeps=100_000)
    theirs = linear_model.ElasticNet(alpha=ELASTIC_NET_ALPHA, l1_ratio=L1_RATIO, fit_intercept=False,
                                     tol=1e-12, max_iter=100_000).fit(x, y)
    assert ours.converged and np.abs(ours.coef - theirs.coef_.T).max() < 1e-6



def textbook_coordinate_descent(x, y, tol, max_sweeps):
    """The solver as written before its loop was made faster: what ``elastic_net`` must equal bit for bit
    (a faster loop that rounds differently would move every pinned DCI value)."""
    n, d = x.shape
    gram, gradient, w = x.T @ x / n, x.T @ y / n, np.zeros((d, y.shape[1]))
    l1, denominator = ELASTIC_NET_ALPHA * L1_RATIO, np.diag(gram) + ELASTIC_NET_ALPHA * (1.0 - L1_RATIO)
    sweeps, full, order = 0, True, np.arange(d)
    while sweeps < max_sweeps:
        sweeps += 1
        largest = 0.0
        for i in order if not full else range(d):
            rho = gradient[i] + gram[i, i] * w[i]
            new = np.sign(rho) * np.maximum(np.abs(rho) - l1, 0.0) / denominator[i]
            delta = new - w[i]
            if delta.any():
                gradient -= np.outer(gram[:, i], delta)
                w[i] = new
                largest = max(largest, float(np.abs(delta).max()))
        if largest < tol and full:
            return w, sweeps
        full = largest < tol
        order = np.flatnonzero(w.any(axis=1))
    return w, sweeps


@pytest.mark.parametrize("width, max_sweeps", [(10, 1000), (64, 1000), (64, 7)])
def test_the_fast_loop_is_the_textbook_loop_bit_for_bit(width, max_sweeps):
    h = np.tanh(Z @ RNG.normal(size=(10, width))) + 0.3 * RNG.normal(size=(3000, width))
    x, y = (h - h.mean(0)) / h.std(0), (Z - Z.mean(0)) / Z.std(0)
    fit = elastic_net(x, y, max_sweeps=max_sweeps)
    coef, sweeps = textbook_coordinate_descent(x, y, 1e-7, max_sweeps)
    assert fit.sweeps == sweeps and fit.converged == (sweeps < max_sweeps)
    assert np.array_equal(fit.coef, coef)

def extrapolation(h):
    _, kernel = metrics.nonlinear_r2(Z[FIT], h[FIT], Z[SCORE], h[SCORE])
    return readout_extrapolation(Z[FIT], h[FIT], Z[SCORE], h[SCORE], kernel, NAMES)


@pytest.mark.slow
def test_an_affine_code_extrapolates_and_a_saturating_one_does_not():
    affine = extrapolation(Z @ RNG.normal(size=(10, 10)) + 0.01 * RNG.normal(size=Z.shape))
    saturating = extrapolation(np.tanh(4 * Z) + 0.01 * RNG.normal(size=Z.shape))  # informative, invertible
    assert affine["linear_r2"] > 0.98
    assert saturating["linear_r2"] < affine["linear_r2"] - 0.1
    assert saturating["kernel_r2"] < affine["linear_r2"] - 0.1
    held = affine["per_latent"][0]
    assert held["n_fit"] == int((Z[FIT, 0] <= 0.5).sum())
    assert held["n_score"] == int((Z[SCORE, 0] > 0.5).sum())
    corners = affine["composition"]["corners"]
    assert [c["factors"] for c in corners] == [[f"z{j}", f"z{j + 1}"] for j in range(0, 10, 2)]
    assert all(c["linear_r2"] > 0.98 for c in corners)


def test_a_read_out_without_a_finite_error_scores_zero_not_nan():
    h = Z @ RNG.normal(size=(10, 10))
    far = h[SCORE].copy()
    far[0] = np.nan  # what a prediction of inf - inf leaves; np.clip would keep it
    kernel = {"alpha": 1.0, "gamma": 0.1}
    y = Z[:, :1]
    readouts = metrics.Readouts.fit(h[FIT], y[FIT], [kernel])
    assert readouts.transfer_r2(far, y[SCORE], y.var(0)) == [(0.0, 0.0)]


def test_block_scores_split_content_from_style():
    per_latent = [{"factor": n, "linear_r2": 0.9 if j < 7 else 0.1, "nonlinear_r2": 0.95 if j < 7 else 0.2}
                  for j, n in enumerate(NAMES)]
    blocks = block_scores({"z7", "z8", "z9"}, per_latent)
    assert blocks == {"style_factors": ["z7", "z8", "z9"], "content_linear_r2": pytest.approx(0.9),
                      "content_kernel_r2": pytest.approx(0.95), "style_linear_r2": pytest.approx(0.1),
                      "style_kernel_r2": pytest.approx(0.2)}
    assert block_scores(set(), per_latent) is None
