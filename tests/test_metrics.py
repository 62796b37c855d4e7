import numpy as np
import pytest

from ident3d import metrics


def halves(z, h):
    n = len(z) // 2
    return z[:n], h[:n], z[n:], h[n:]


@pytest.fixture(scope="module")
def z():
    return np.random.default_rng(0).uniform(-1, 1, size=(2000, 10))


def test_identity_scores_one(z):
    assert metrics.linear_r2(*halves(z, z)) == pytest.approx(np.ones(10))
    per, assignment = metrics.mcc(z, z)
    assert per == pytest.approx(np.ones(10)) and (assignment == np.arange(10)).all()
    spearman, _ = metrics.mcc(z, z, "spearman")
    assert spearman == pytest.approx(np.ones(10))


def test_permutation_sign_flip_and_scaling_give_mcc_one(z):
    rng = np.random.default_rng(1)
    perm = rng.permutation(10)
    h = z[:, perm] * rng.choice([-3.0, 0.5, 2.0], size=10)
    per, assignment = metrics.mcc(z, h)
    assert per == pytest.approx(np.ones(10))
    np.testing.assert_array_equal(perm[assignment], np.arange(10))
    # Spearman is invariant to monotone maps too.
    assert metrics.mcc(z, np.tanh(3 * h), "spearman")[0] == pytest.approx(np.ones(10))


def test_linear_mix_has_full_r2_but_lower_mcc(z):
    mix = np.random.default_rng(2).normal(size=(10, 10))
    h = z @ mix
    assert metrics.linear_r2(*halves(z, h)) == pytest.approx(np.ones(10), abs=1e-9)
    assert metrics.mcc(z, h)[0].mean() < 0.9


def test_independent_noise_scores_about_zero(z):
    h = np.random.default_rng(3).normal(size=z.shape)
    assert metrics.linear_r2(*halves(z, h)).mean() < 0.02
    assert metrics.mcc(z, h)[0].mean() < 0.1
    nonlinear, _ = metrics.nonlinear_r2(*halves(z, h))
    assert nonlinear.mean() < 0.05


def test_duplicated_latent_is_penalised_by_mcc(z):
    h = z.copy()
    h[:, 1] = z[:, 0]  # latent 1 is lost, latent 0 appears twice
    per, _ = metrics.mcc(z, h)
    assert per[0] == pytest.approx(1) and per[1] < 0.1
    assert per.mean() < 0.95


def test_rectangular_matching(z):
    per, assignment = metrics.mcc(z, z[:, :6])
    assert (assignment[6:] == -1).all() and per[6:].sum() == 0 and per[:6] == pytest.approx(1)
    wide = np.hstack([np.random.default_rng(4).normal(size=(len(z), 20)), z[:, ::-1]])
    per, assignment = metrics.mcc(z, wide)
    assert per == pytest.approx(np.ones(10)) and (assignment == 29 - np.arange(10)).all()


def test_nonlinear_r2_recovers_a_nonlinear_but_invertible_map(z):
    h = z**3 + 0.05 * z  # strictly monotone per latent, far from linear
    linear = metrics.linear_r2(*halves(z, h)).mean()
    nonlinear, chosen = metrics.nonlinear_r2(*halves(z, h))
    assert nonlinear.mean() > 0.88 and nonlinear.mean() > linear + 0.05
    assert len(chosen) == 10 and {"alpha", "gamma"} <= set(chosen[0])


def test_golden_values():
    """A fixed small fixture; every metric pinned to 1e-6 so silent changes are caught."""
    rng = np.random.default_rng(42)
    z = rng.uniform(-1, 1, size=(400, 10))
    h = np.tanh(z @ (np.eye(10) + 0.3 * rng.normal(size=(10, 10)))) + 0.1 * rng.normal(size=(400, 10))
    got = {
        "linear": metrics.linear_r2(*halves(z, h)).mean(),
        "nonlinear": metrics.nonlinear_r2(*halves(z, h))[0].mean(),
        "pearson": metrics.mcc(z, h)[0].mean(),
        "spearman": metrics.mcc(z, h, "spearman")[0].mean(),
    }
    expected = {"linear": 0.81451506, "nonlinear": 0.81210283, "pearson": 0.72262422,
                "spearman": 0.7209979}
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-6), key



def test_the_spearman_ceiling_is_one_without_ties_and_below_it_with_them():
    from ident3d.metrics import spearman_ceiling

    assert spearman_ceiling(np.linspace(5, 25, 10)) == pytest.approx(1.0)
    two_blocks = np.array([25.0] * 5 + [5.0] * 5)
    assert spearman_ceiling(two_blocks) == pytest.approx(0.8704, abs=1e-4)  # 5 x 5 ties: sqrt(75/99)


def test_the_bootstrap_scores_each_resample_as_the_metrics_score_it_alone():
    """Resamples are scored a stack at a time: R² the same bits as one resample alone, the matched
    correlation within rounding of ``mcc`` (which takes it from the whole correlation matrix)."""
    rng = np.random.default_rng(3)
    z = rng.uniform(-1, 1, (50, 4))
    z[:, 2] = 0.25  # a constant latent: R² 1 only where predicted exactly
    prediction = z + 0.2 * rng.normal(size=z.shape)
    prediction[:, 2] = 0.25
    h = np.column_stack([z @ rng.normal(size=(4, 3)), rng.normal(size=50)])
    assignment = np.array([1, -1, 0, 3])  # one latent unmatched
    rows = rng.integers(0, 50, size=(metrics.BOOTSTRAP_CHUNK + 5, 50))  # one stack and part of another
    for clip_each in (True, False):
        alone = [metrics.r2_per_latent(z[pick], prediction[pick]) for pick in rows]
        expected = [np.clip(r, 0, 1).mean() if clip_each else np.clip(r.mean(), 0, 1) for r in alone]
        assert np.array_equal(metrics.bootstrap_r2(z, prediction, rows, clip_each), expected)
    expected = [metrics.mcc(z[pick], h[pick], "pearson", assignment)[0].mean() for pick in rows]
    np.testing.assert_allclose(metrics.bootstrap_mcc(z, h, assignment, rows), expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("shape", [(1,), (2,), (9,), (60, 3), (40, 2, 3)])
def test_average_ranks_are_scipys_rankdata_without_scipy_stats(shape):
    from scipy.stats import rankdata

    rng = np.random.default_rng(5)
    for a in (rng.integers(0, 4, shape).astype(float), rng.normal(size=shape), np.full(shape, 2.0)):
        assert np.array_equal(metrics.average_ranks(a), rankdata(a, axis=0), equal_nan=True)
    with_nan = rng.normal(size=shape)
    with_nan.flat[0] = np.nan  # a column with a NaN ranks as NaN throughout, as scipy's does
    assert np.array_equal(metrics.average_ranks(with_nan), rankdata(with_nan, axis=0), equal_nan=True)
