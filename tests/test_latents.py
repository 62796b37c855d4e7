import numpy as np
import pytest
from scipy import stats

from ident3d.errors import LatentError
from ident3d.latents import N_LATENTS, sample_conditional, sample_uniform
from ident3d.variants import get_variant

V2 = get_variant("v2")
check_raw_latents = V2.check_raw


def test_factor_table_is_complete_and_ordered():
    assert [f.index for f in V2.factors] == list(range(N_LATENTS))
    assert len(set(V2.names)) == N_LATENTS
    assert V2.names[7:] == ("object_hue", "spotlight_hue", "ground_hue")
    assert all(f.low == -1 and f.high == 1 for f in V2.factors)


def test_uniform_sampling_is_seeded_and_in_box():
    a, b, c = sample_uniform(1000, seed=3), sample_uniform(1000, seed=3), sample_uniform(1000, 4)
    assert a.shape == (1000, 10) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.min() >= -1 and a.max() <= 1
    assert stats.kstest(a[:, 5], stats.uniform(-1, 2).cdf).pvalue > 1e-3


@pytest.mark.parametrize("kind,beta", [("normal", None), ("laplace", None), ("gennorm", 3.0)])
def test_conditionals_are_reproducible_and_stay_in_box(kind, beta):
    z = sample_uniform(5000, seed=0)
    draw = lambda seed: sample_conditional(z, np.random.default_rng(seed), kind, 0.3, beta)  # noqa: E731
    a, b = draw(1), draw(1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, draw(2))
    assert a.min() >= -1 and a.max() <= 1


@pytest.mark.parametrize("kind,beta,dist", [
    ("normal", None, stats.norm),
    ("laplace", None, stats.laplace),
    ("gennorm", 3.0, stats.gennorm(3.0)),
])
def test_conditionals_match_truncated_target(kind, beta, dist):
    # Anchor near the edge so truncation matters: 0.8 with scale 0.5 cuts a lot of mass.
    anchor, scale = 0.8, 0.5
    z = np.full((20000, 10), anchor)
    x = sample_conditional(z, np.random.default_rng(0), kind, scale, beta)[:, 0]
    lo, hi = dist.cdf((-1 - anchor) / scale), dist.cdf((1 - anchor) / scale)

    def truncated_cdf(v):
        return (dist.cdf((v - anchor) / scale) - lo) / (hi - lo)

    assert stats.kstest(x, truncated_cdf).pvalue > 1e-3
    # An untruncated target must be rejected: the test can fail.
    assert stats.kstest(x, lambda v: dist.cdf((v - anchor) / scale)).pvalue < 1e-6


def test_normal_conditional_matches_scipy_truncnorm():
    anchor, scale = -0.9, 0.2
    x = sample_conditional(np.full((20000, 10), anchor), np.random.default_rng(5), "normal",
                           scale)[:, 3]
    target = stats.truncnorm((-1 - anchor) / scale, (1 - anchor) / scale, loc=anchor, scale=scale)
    assert stats.kstest(x, target.cdf).pvalue > 1e-3


def test_per_latent_scales():
    z = np.zeros((20000, 10))
    scales = np.linspace(0.01, 0.3, 10)
    x = sample_conditional(z, np.random.default_rng(0), "normal", scales)
    np.testing.assert_allclose(x.std(axis=0), scales, rtol=0.05)


def test_tiny_scale_far_tail_is_exact_and_finite():
    z = np.array([[-1.0] * 5 + [1.0] * 5])
    x = sample_conditional(np.repeat(z, 1000, 0), np.random.default_rng(0), "laplace", 1e-3)
    assert np.isfinite(x).all() and x.min() >= -1 and x.max() <= 1
    assert np.abs(x - z).max() < 0.05


@pytest.mark.parametrize("bad,fragment", [
    (np.zeros((4, 9)), "shape (N, 10)"),
    (np.zeros(10), "shape (N, 10)"),
])
def test_bad_shapes_are_refused(bad, fragment):
    with pytest.raises(LatentError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        check_raw_latents(bad)


def test_bad_values_name_first_row_and_column():
    z = np.zeros((5, 10))
    z[3, 7] = np.nan
    z[4, 1] = 2.0
    with pytest.raises(LatentError, match=r"row 3, column 7 \(object_hue\)"):
        check_raw_latents(z)
    z[3, 7] = 0
    with pytest.raises(LatentError, match=r"row 4, column 1 \(object_y\).*2\.0"):
        check_raw_latents(z)


def test_bad_scale_and_conditional_are_refused():
    z = np.zeros((2, 10))
    rng = np.random.default_rng(0)
    with pytest.raises(LatentError, match="one per latent"):
        sample_conditional(z, rng, "normal", np.ones(3))
    with pytest.raises(LatentError, match="positive"):
        sample_conditional(z, rng, "normal", -1.0)
    with pytest.raises(LatentError, match="beta"):
        sample_conditional(z, rng, "gennorm", 0.1)
    with pytest.raises(LatentError, match="unknown conditional"):
        sample_conditional(z, rng, "cauchy", 0.1)
