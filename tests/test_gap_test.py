"""The memorisation test (ident3d.gap_test): its statistic is the metrics' own, it keeps its level on
splits no model saw whatever their sizes, it finds a memoriser, and Holm adjusts as Holm does."""

import numpy as np
import pytest

from ident3d import fresh, gap_test, metrics
from ident3d.protocols import get_protocol

LATENTS = 4


def _model(seed: int = 0):
    """Latents and the features of a fixed nonlinear, noisy, heavy-tailed 'encoder', and its read-out."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(LATENTS, 8))

    def encode(z, noise=0.3):
        return np.tanh(z @ mixing) + noise * rng.standard_t(3, size=(len(z), 8))

    z_fit = rng.uniform(-1, 1, (800, LATENTS))
    h_fit = encode(z_fit)
    _, assignment = metrics.mcc(z_fit, h_fit)
    readout = fresh.Readout(z_fit, h_fit, assignment, get_protocol("cl-ica-2021"))
    z = rng.uniform(-1, 1, (3000, LATENTS))
    return readout, z, encode(z), rng, encode


def test_the_statistic_is_clipped_per_latent_r2_and_pearson_mcc_under_the_fixed_read_outs():
    readout, z, h, *_ = _model()
    rows = readout.row_statistics(z, h)
    tested = gap_test.permutation_p(rows[:500], rows[500:1500], LATENTS, seed=0, permutations=9)
    r2 = [np.clip(metrics.r2_per_latent(z[s], readout.linear.predict(h[s])), 0, 1).mean()
          for s in (slice(0, 500), slice(500, 1500))]
    mcc = [metrics.mcc(z[s], h[s], "pearson", readout.assignment)[0].mean()
           for s in (slice(0, 500), slice(500, 1500))]
    assert tested["linear_r2"]["statistic_gap"] == pytest.approx(r2[0] - r2[1], abs=1e-9)
    assert tested["mcc_pearson"]["statistic_gap"] == pytest.approx(mcc[0] - mcc[1], abs=1e-9)


def test_splits_no_model_saw_are_flagged_at_most_at_the_level_whatever_their_sizes():
    readout, z, h, rng, _ = _model(1)
    rows = readout.row_statistics(z, h)
    flags, p_values = 0, []
    for k in range(200):  # 300 "public" rows against 1,000 "fresh" ones: MCC is biased on the smaller set
        order = rng.permutation(len(rows))
        tested = gap_test.permutation_p(rows[order[:300]], rows[order[300:1300]], LATENTS, seed=k,
                                        permutations=199)
        p_values.append([cell["p"] for cell in tested.values()])
        flags += min(gap_test.holm(p_values[-1])) <= gap_test.LEVEL
    assert flags <= 10  # a level of 2.5%: 5 expected; more than 10 of 200 has chance below 1%
    assert 0.02 < np.mean(np.array(p_values) <= 0.1) < 0.2  # p-values spread, not stuck at 1


def test_a_model_that_answers_the_public_rows_better_is_flagged():
    readout, z, h, rng, encode = _model(2)
    public = rng.permutation(len(z))[:300]
    remembered = h.copy()  # on the images it stored, a memoriser's features carry half the noise
    remembered[public] = encode(z[public], noise=0.15)
    rows = readout.row_statistics(z, remembered)
    rest = np.setdiff1d(np.arange(len(z)), public)[:1000]
    tested = gap_test.permutation_p(rows[public], rows[rest], LATENTS, seed=0)
    assert all(cell["statistic_gap"] > 0 for cell in tested.values())
    assert min(gap_test.holm([cell["p"] for cell in tested.values()])) <= gap_test.LEVEL


def test_pairs_are_relabelled_whole():
    readout, z, h, *_ = _model(3)
    rows = readout.row_statistics(z, h)
    whole = gap_test.permutation_p(rows[:400], rows[400:1200], LATENTS, seed=5, paired=True)
    assert all(0 < cell["p"] <= 1 for cell in whole.values())
    with pytest.raises(ValueError):  # an odd number of rows is no set of pairs
        gap_test.permutation_p(rows[:401], rows[401:1201], LATENTS, seed=5, paired=True)


def test_holm_adjusts_step_down_and_keeps_the_input_order():
    assert gap_test.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert gap_test.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    gaps = [{"linear_r2": {"p": 0.004}, "mcc_pearson": {"p": 0.2}}, {"linear_r2": {"p": 0.02}}]
    assert fresh.judge(gaps)  # 3 * 0.004 = 0.012 <= 0.025
    assert [g["linear_r2"]["p_holm"] for g in gaps] == pytest.approx([0.012, 0.04])
    assert not gaps[1]["linear_r2"]["above_chance"]


def test_the_verdict_names_the_level_the_adjusted_p_and_the_measured_false_alarms():
    gap = {"linear_r2": {"p_holm": 0.004, "above_chance": True}, "mcc_pearson": {"p_holm": 0.3,
                                                                                  "above_chance": False}}
    words = gap_test.verdict(gap, "ident3d-eval-v1")
    assert "flagged (linear_r2 p = 0.004, Holm-adjusted, level 2.5%" in words
    assert "false alarms " in words and "a warning only, the rank uses the fresh score" in words
    gap["linear_r2"].update(p_holm=0.05, above_chance=False)
    assert "not flagged (smallest adjusted p = 0.05" in gap_test.verdict(gap, "ident3d-eval-v1")
    assert "not measured under nope" in gap_test.false_alarms("nope")
