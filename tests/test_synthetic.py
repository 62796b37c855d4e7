"""The synthetic experiments: generative processes, losses as the original code wrote them, runs that
resume exactly, and the report's verdicts."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from scipy import special, stats
from torch.nn import functional as F

from ident3d.baselines.losses import AnInfoNCE, LpInfoNCE, VonMisesFisherInfoNCE
from ident3d.baselines.synthetic import run as synthetic_run
from ident3d.baselines.synthetic.budget import Budget
from ident3d.baselines.synthetic.processes import (
    BOX,
    MIXING_SLOPE,
    Process,
    anisotropic_sphere_normal,
    invertible_mlp,
    von_mises_fisher,
)
from ident3d.baselines.synthetic.table import get_row, rows
from ident3d.cli import main
from ident3d.errors import TrainingError

N = 20_000


def invert(mixing: torch.nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    for layer in reversed(mixing):
        if isinstance(layer, torch.nn.Linear):
            x = torch.linalg.solve(layer.weight.double(), x.T).T
        else:
            x = torch.where(x >= 0, x, x / MIXING_SLOPE)
    return x


@pytest.mark.slow
def test_mixing_is_invertible_well_conditioned_and_seeded():
    g = invertible_mlp(10, 3, seed=4)
    z = torch.from_numpy(Process("box").marginal_sample(np.random.default_rng(0), 1000))
    with torch.no_grad():
        x = g.double()(z)
    assert torch.allclose(invert(g, x), z, atol=1e-9)
    conds = [np.linalg.cond(m.weight.numpy()) for m in g if isinstance(m, torch.nn.Linear)]
    assert len(conds) == 3 and max(conds) < 5  # the best of 25,000 random matrices (median 28)
    assert torch.equal(invertible_mlp(10, 3, seed=4)[0].weight, g[0].weight.float())
    assert not torch.equal(invertible_mlp(10, 3, seed=5)[0].weight, g[0].weight.float())


@pytest.mark.parametrize("conditional, scale, beta, reference", [
    ("normal", 0.05, None, stats.norm(scale=0.05)),
    ("laplace", 0.05, None, stats.laplace(scale=0.05)),
    ("gennorm", 0.05, 3.0, stats.gennorm(3.0, scale=0.05)),
])
def test_box_and_unbounded_conditionals_have_the_asked_spread(conditional, scale, beta, reference):
    rng = np.random.default_rng(1)
    for space, marginal in (("box", "uniform"), ("unbounded", "normal")):
        process = Process(space, marginal, conditional, scale, beta)
        centre = np.full((N, 10), 0.5)  # 10 sd from the box's faces: truncation is invisible
        offsets = (process.conditional_sample(rng, centre) - centre).ravel()
        assert stats.kstest(offsets, reference.cdf).pvalue > 0.01
    near_edge = Process("box", conditional=conditional, scale=scale, beta=beta)
    edge = near_edge.conditional_sample(rng, np.full((N, 10), 0.01))
    assert edge.min() >= BOX[0] and edge.max() <= BOX[1]


def test_von_mises_fisher_has_the_mean_cosine_of_its_kappa():
    rng = np.random.default_rng(2)
    mu = Process("sphere").marginal_sample(rng, N)
    for kappa in (1.0, 10.0):
        x = von_mises_fisher(rng, mu, kappa)
        assert np.allclose(np.linalg.norm(x, axis=1), 1)
        d = 10  # E[mu . x] = I_{d/2}(kappa) / I_{d/2 - 1}(kappa)
        expected = special.iv(d / 2, kappa) / special.iv(d / 2 - 1, kappa)
        cosines = (x * mu).sum(1)
        assert abs(cosines.mean() - expected) < 4 * cosines.std() / np.sqrt(N)


def test_anisotropic_normal_spreads_each_latent_by_its_precision():
    rng = np.random.default_rng(3)
    precisions = np.linspace(5, 25, 10)
    mu = Process("sphere").marginal_sample(rng, N)
    x = anisotropic_sphere_normal(rng, mu, precisions, shell=0.1)
    assert np.allclose(np.linalg.norm(x, axis=1), 1)
    spread = (x - mu).var(0)
    # larger precision, smaller spread: the rank order is exact and the ratio near 25 / 5
    assert stats.spearmanr(spread, precisions).statistic < -0.95
    assert 3 < spread[0] / spread[-1] < 7


def test_every_row_builds_and_bad_rows_are_refused():
    table = rows()
    assert [r for r in table if r.startswith("T")] == [f"T1.{i}" for i in range(1, 13)] + [
        f"T2.{i}" for i in range(1, 11)]
    assert get_row("T2.8").run_id == "T1.5" and get_row("T1.5").run_id == "T1.5"
    with pytest.raises(TrainingError, match="unknown synthetic row 'T9.9'"):
        get_row("T9.9")
    with pytest.raises(TrainingError, match="not defined"):
        Process("unbounded", marginal="uniform")
    with pytest.raises(TrainingError, match="not defined"):
        Process("box", marginal="normal")
    with pytest.raises(TrainingError, match="lives on the sphere"):
        Process("box", conditional="vmf")


def test_anchor_negatives_are_the_cl_ica_loss():
    torch.manual_seed(0)
    h, h_pos = torch.randn(8, 4), torch.randn(8, 4)
    # LpSimCLRLoss(p=2, simclr_compatibility_mode=True) with z3 = roll(z1): anchors (self included)
    # and the positive in the denominator, loss = 2 * (pos / 2 + logsumexp / 2) averaged
    neg = torch.cdist(h, torch.roll(h, 1, 0)).pow(2)
    pos = (h - h_pos).norm(dim=1).pow(2)
    expected = (pos + torch.logsumexp(-torch.cat([neg, pos[:, None]], 1), 1)).mean()
    assert LpInfoNCE(2, negatives="anchors")(h, h_pos).item() == pytest.approx(expected.item(), rel=1e-5)
    a, b = F.normalize(h, dim=1), F.normalize(h_pos, dim=1)
    dots, paired = a @ torch.roll(a, 1, 0).T, (a * b).sum(1)
    expected = (-paired + torch.logsumexp(torch.cat([dots, paired[:, None]], 1), 1)).mean()
    vmf = VonMisesFisherInfoNCE(negatives="anchors")(h, h_pos)
    assert vmf.item() == pytest.approx(expected.item(), rel=1e-5)


def test_symmetric_negatives_are_nt_xent_and_aninfonce_expands_exactly():
    torch.manual_seed(1)
    h, h_pos = torch.randn(6, 10), torch.randn(6, 10)
    loss = AnInfoNCE(10, negatives="symmetric", precision_map="exp")
    with torch.no_grad():
        loss.raw_precision.copy_(torch.linspace(0, 3, 10))
    views = F.normalize(torch.cat([h, h_pos]), dim=1)
    lam = torch.exp(torch.linspace(0, 3, 10))
    logits = -0.5 * ((views[:, None] - views[None]) ** 2 * lam).sum(-1)
    logits.fill_diagonal_(-float("inf"))
    target = torch.cat([torch.arange(6) + 6, torch.arange(6)])
    assert loss(h, h_pos).item() == pytest.approx(F.cross_entropy(logits, target).item(), rel=1e-5)
    assert torch.allclose(loss.precision, lam)
    with pytest.raises(TrainingError, match="include_self applies"):
        LpInfoNCE(negatives="anchors", include_self=True)


def test_a_sphere_radius_never_reaches_the_vmf_loss_or_the_scores_but_aninfonce_scores_the_unit_sphere():
    """The sphere rows keep a learnable radius where main_mlp.py fixes it at 1 (rows.toml): the vMF loss
    normalises its inputs, so loss and gradients are those of the unit sphere, and R² and MCC ignore a
    common scale. The AnInfoNCE rows end on the unit sphere as the authors' encoder does: what is
    scored are normalised features, which an unbounded model's are not."""
    from ident3d.baselines.models import OUTPUT_SPACES
    from ident3d.baselines.synthetic.run import EVAL_POINTS, score

    torch.manual_seed(2)
    h, h_pos = torch.randn(16, 10, requires_grad=True), torch.randn(16, 10)
    sphere, unit = OUTPUT_SPACES["sphere"](10), OUTPUT_SPACES["unit-sphere"](10)
    assert list(unit.parameters()) == []
    with torch.no_grad():
        sphere.radius.fill_(3.7)
    loss = VonMisesFisherInfoNCE(negatives="anchors")
    on_sphere = loss(sphere(h), sphere(h_pos))
    (grad_sphere,) = torch.autograd.grad(on_sphere, h)
    on_unit = loss(unit(h), unit(h_pos))
    (grad_unit,) = torch.autograd.grad(on_unit, h)
    assert on_sphere.item() == pytest.approx(on_unit.item(), rel=1e-6)
    assert torch.allclose(grad_sphere, grad_unit, atol=1e-7)
    assert torch.allclose(unit(h).norm(dim=1), torch.ones(16))
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, (2 * EVAL_POINTS, 10))
    features = np.tanh(z @ rng.normal(size=(10, 10)))
    fit, held = z[:EVAL_POINTS], z[EVAL_POINTS:]
    scaled, unscaled = score(3.7 * features, fit, held), score(features, fit, held)
    assert scaled["assignment"] == unscaled["assignment"]
    assert [scaled[m] for m in ("r2", "mcc")] == pytest.approx([unscaled[m] for m in ("r2", "mcc")], rel=1e-9)
    normalised = features / np.linalg.norm(features, axis=1, keepdims=True)
    assert score(normalised, fit, held)["r2"] != pytest.approx(score(features, fit, held)["r2"], abs=0.5)


def test_exp_precision_moves_lambda_as_far_as_the_data_asks():
    """Adam moves a raw parameter by about its learning rate per step when the gradient keeps its
    sign: in exp form Lambda grows by a factor e^(lr * steps), in softplus form (the AnInfoNCE
    code's) by about lr * steps."""
    moved = {}
    for precision_map, objective in (("exp", torch.log), ("softplus", lambda v: v)):
        loss = AnInfoNCE(1, isotropic=True, precision_map=precision_map)
        optimizer = torch.optim.Adam(loss.parameters(), lr=1e-2)
        for _ in range(300):  # the data ask for a larger Lambda at every step
            optimizer.zero_grad()
            (-objective(loss.precision).sum()).backward()
            optimizer.step()
        moved[precision_map] = loss.precision.item()
    assert moved["exp"] == pytest.approx(np.exp(3.0), rel=0.02)
    assert moved["softplus"] == pytest.approx(1.0 + 3.0, rel=0.1)


def test_the_sphere_normal_marginal_is_a_projected_normal_around_the_first_axis():
    """main_mlp.py's sphere marginal for Table 1 rows 9-10: Normal(e_1, sigma = 1), projected."""
    z = get_row("T1.9").process.marginal_sample(np.random.default_rng(5), N)
    assert np.allclose(np.linalg.norm(z, axis=1), 1)
    reference = np.random.default_rng(6).standard_normal((N, 10))
    reference[:, 0] += 1
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    for axis in (0, 1):  # the first axis leans toward +1, the others are symmetric
        assert stats.ks_2samp(z[:, axis], reference[:, axis]).pvalue > 0.01
    assert z[:, 0].mean() > 0.2 and abs(z[:, 1].mean()) < 0.02


@pytest.mark.slow
def test_identity_row_is_the_least_squares_read_out_of_g(tmp_path):
    row = get_row("T1.5")
    path = synthetic_run.run(row, 3, Budget(), tmp_path, column="identity")
    assert path.name == "T1.5-identity-seed3.json"
    result = json.loads(path.read_text())
    z_fit, z_score = synthetic_run.held_out(row, 3)
    g = invertible_mlp(10, 3, 3)
    with torch.no_grad():
        x_fit, x_score = (g(torch.from_numpy(z).float()).double().numpy() for z in (z_fit, z_score))
    design = np.hstack([x_fit, np.ones((len(x_fit), 1))])
    coef = np.linalg.lstsq(design, z_fit, rcond=None)[0]
    prediction = np.hstack([x_score, np.ones((len(x_score), 1))]) @ coef
    r2 = 1 - ((z_score - prediction) ** 2).sum(0) / ((z_score - z_score.mean(0)) ** 2).sum(0)
    assert result["r2"] == pytest.approx(100 * r2.mean(), abs=1e-6)
    assert 40 < result["r2"] < 90  # a nonlinear mixing: well below the trained encoders


@pytest.mark.slow
def test_supervised_row_reads_the_latents_better_than_the_observations_do(tmp_path):
    """Supervision (MSE on z) can learn g's inverse, whose R² is 100; within 300 steps it must already
    pass the identity read-out of the same seed, the best a linear map of g(z) can do."""
    budget = Budget(steps=300, batch_size=128, lr=1e-3, eval_every=100)
    row = get_row("T1.1")
    supervised = json.loads(synthetic_run.run(row, 0, budget, tmp_path, column="supervised").read_text())
    identity = json.loads(synthetic_run.run(row, 0, budget, tmp_path, column="identity").read_text())
    assert supervised["column"] == "supervised" and identity["column"] == "identity"
    assert [c["r2"] for c in supervised["curve"]] == sorted(c["r2"] for c in supervised["curve"])
    assert supervised["r2"] > identity["r2"] + 5


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [[0], [0, 1]], ids=["one seed", "stacked seeds"])
def test_a_row_resumes_to_the_result_of_an_unbroken_run(tmp_path, monkeypatch, seeds):
    budget = Budget(steps=12, batch_size=32, eval_every=4)
    row = get_row("A.1")
    unbroken = [json.loads(p.read_text())
                for p in synthetic_run.run_seeds(row, seeds, budget, tmp_path / "a")]
    save = synthetic_run.save_checkpoint

    def stop_after_saving(*args, **kwargs):
        save(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(synthetic_run, "save_checkpoint", stop_after_saving)
    with pytest.raises(KeyboardInterrupt):
        synthetic_run.run_seeds(row, seeds, budget, tmp_path / "b")
    monkeypatch.setattr(synthetic_run, "save_checkpoint", save)
    resumed = [json.loads(p.read_text()) for p in synthetic_run.run_seeds(row, seeds, budget, tmp_path / "b")]
    for before, after in zip(unbroken, resumed, strict=True):
        for key in ("r2", "mcc", "r2_per_latent", "precision"):
            assert after[key] == before[key]
        assert [c["step"] for c in after["curve"]] == [4, 8, 12]
        assert len(after["precision"]["learned_matched"]) == 10
    assert [r["seed"] for r in resumed] == seeds
    assert not list((tmp_path / "b").glob(".*checkpoint*"))


STACKED_TOLERANCE = 0.05  # points of R² (also per latent), MCC, loss, Lambda: float32 rounding, 12 steps


@pytest.mark.slow
@pytest.mark.parametrize(("row_id", "column"), [("T2.2", "unsupervised"), ("A.1", "unsupervised"),
                                                ("T1.1", "supervised")])
def test_stacked_seeds_equal_their_single_seed_runs(tmp_path, row_id, column):
    """Seeds trained as one stacked model start from their own runs' initialisation and see their
    pairs: their curves match the single-seed runs to float32 rounding, and each result says it was
    stacked, and with which seeds."""
    budget = Budget(steps=12, batch_size=32, eval_every=4)
    row = get_row(row_id)
    stacked = synthetic_run.run_seeds(row, [2, 0], budget, tmp_path / "stacked", progress=False,
                                      column=column)
    for path, seed in zip(stacked, [2, 0], strict=True):
        together = json.loads(path.read_text())
        alone = json.loads(synthetic_run.run(row, seed, budget, tmp_path / "alone", progress=False,
                                             column=column).read_text())
        assert path.name == synthetic_run.result_name(row, seed, budget, column)
        assert together["seed"] == seed and together["stacked_seeds"] == [2, 0]
        assert "stacked_seeds" not in alone
        for a, b in zip(together["curve"], alone["curve"], strict=True):
            assert a["step"] == b["step"]
            for key in ("r2", "mcc", "loss"):
                assert a[key] == pytest.approx(b[key], abs=STACKED_TOLERANCE), (seed, a["step"], key)
        assert together["r2_per_latent"] == pytest.approx(alone["r2_per_latent"], abs=STACKED_TOLERANCE)
        if "precision" in alone:
            assert together["precision"]["learned_matched"] == pytest.approx(
                alone["precision"]["learned_matched"], abs=STACKED_TOLERANCE)
    again = synthetic_run.run_seeds(row, [0, 1], budget, tmp_path / "stacked", progress=False, column=column)
    assert json.loads(again[0].read_text())["stacked_seeds"] == [2, 0]  # seed 0 was done: only 1 ran
    assert "stacked_seeds" not in json.loads(again[1].read_text())  # a stack of one is a single run


@pytest.mark.slow
def test_cli_runs_a_tiny_row_and_reports_it_beside_the_paper(tmp_path, capsys):
    out = tmp_path / "results"
    for seed in (0, 1, 2):
        assert main(["-q", "synthetic", "run", "--row", "T2.8", "--seed", str(seed), "--out", str(out),
                     "--steps", "6", "--batch-size", "16", "--eval-every", "3"]) == 0
    assert sorted(p.name for p in out.glob("*.json"))[0] == "T1.5-seed0-b16-n6-lr0.0001.json"  # shared
    report = tmp_path / "report.md"
    assert main(["synthetic", "report", "--results", str(out), "--out", str(report)]) == 0
    text = report.read_text()
    # one set of runs, two rows of the paper: T1.5 judged on R², T2.8 on MCC, each against its number
    assert "| T1.5 | unsupervised |" in text and "| R² | 99.60 ± 0.02 |" in text
    assert "| T2.8 | unsupervised |" in text and "| MCC | 58.26 ± 3.00 |" in text and "16 x 6" in text
    assert "not reached at 16 x 6, lr 0.0001 (paper 99.60 ± 2)" in text  # 6 steps, far below
    assert main(["synthetic", "report", "--results", str(out), "--out", str(report)]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert main(["synthetic", "report", "--results", str(out), "--readme"]) == 0
    readme = capsys.readouterr().out  # counts only the runs at the plan's table budget: none here
    assert "| unsupervised |" not in readme and "720 times fewer pairs than the paper's" in readme
    assert "240 times fewer than its 6,144 x 100,001, lr 0.0001 (supervised)" in readme  # main_mlp.py's
    for seed in (0, 1, 2):  # the identity column has no budget: it is counted
        assert main(["-q", "synthetic", "run", "--row", "T1.5", "--column", "identity", "--seed", str(seed),
                     "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["synthetic", "report", "--results", str(out), "--readme"]) == 0
    assert "| identity | 1 | " in capsys.readouterr().out
    crafted = json.loads(next(out.glob("*.json")).read_text()) | {"curve": [{"step": "x"}]}
    (out / "zz-crafted.json").write_text(json.dumps(crafted))
    assert main(["synthetic", "report", "--results", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "zz-crafted.json: not a synthetic result" in err and "curve" in err
    assert err.count("\n") == 1
    # a result filed under a row whose setting it is not (a re-keyed row): refused, naming both titles
    moved = json.loads(next(out.glob("T1.5-*.json")).read_text()) | {"row": "T1.6"}
    (out / "zz-crafted.json").write_text(json.dumps(moved))
    assert main(["synthetic", "report", "--results", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"title (the run's {moved['title']!r}; T1.6 is now" in err
    assert "file it under the row of its setting" in err


def test_the_report_sets_a_run_beside_the_authors_log_at_the_same_step():
    from dataclasses import asdict

    from ident3d.baselines.synthetic.report import against_the_log

    budget = {**asdict(Budget()), "steps": 10000}
    run = {"row": "A.1", "column": "unsupervised", "budget": budget,
           "curve": [{"step": 5000, "r2": 90.0, "mcc": 60.0}, {"step": 10000, "r2": 97.0, "mcc": 80.0}]}
    lines = against_the_log([run, {**run, "curve": [{"step": 10000, "r2": 96.0, "mcc": 78.0}]}])
    assert lines[2:] == ["| A.1 | 256 x 10,000, lr 0.0001 | 10,000 / 10,001 | 96.50 / 97.14 | "
                         "79.00 / 83.30 |"]
    assert against_the_log([{**run, "row": "T2.1"}])[2:] == []  # no log for the paper's Tables 1-2


def test_a_deviation_row_is_set_beside_its_reference_at_the_same_budget_only():
    from dataclasses import asdict

    from ident3d.baselines.synthetic.report import beside

    budget = asdict(Budget(steps=100))
    curve = [{"step": 100, "r2": 0.0, "mcc": 0.0}]

    def runs(row, values, **extra):
        return [{"row": row, "column": "unsupervised", "seed": seed, "budget": {**budget, **extra},
                 "curve": curve, "r2": v, "mcc": v - 10} for seed, v in enumerate(values)]

    lines = beside(runs("D.1", [90.0]) + runs("T2.3", [95.0, 96.0, 97.0]) + runs("D.2", [80.0], steps=200))
    assert lines[2:] == ["| D.1 | T2.3 | 256 x 100, lr 0.0001 | 1 | 90.00 / 96.00 | 80.00 / 86.00 | "
                         "-5.00; not decidable with 1 seed | -5.00; not decidable with 1 seed |"]
    # D.2 ran at another budget than T2.3: not compared. Paired by seed: the spread between seeds
    # that both arms share (here 10 points) cancels, and the steady 1-point gap is decided.
    decided = beside(runs("D.1", [94.0, 84.0, 74.0]) + runs("T2.3", [95.0, 85.0, 75.0]))[2]
    assert "| 3 |" in decided and "| -1.00 [-1.00, -1.00]; differs |" in decided


def test_a_run_whose_features_ended_constant_is_counted_as_collapsed():
    from ident3d.baselines.synthetic.report import seeds_cell

    runs = [{"r2": 98.0, "mcc": 97.0}, {"r2": -0.03, "mcc": 0.0}, {"r2": 0.0, "mcc": 12.0}]
    assert seeds_cell(runs) == "3 (1 collapsed)" and seeds_cell(runs[::2]) == "2"


def test_a_verdict_is_the_interval_against_the_tolerance_not_the_mean():
    from ident3d.baselines.verdicts import reproduction

    assert reproduction([57.0, 60.0], 58.26) == "not decidable with 2 seeds"
    assert reproduction([57.0, 58.0, 59.0], 58.26).startswith("reproduced (paper 58.26 ± 5)")
    assert reproduction([70.0, 71.0, 72.0], 58.26).startswith("not reproduced")
    assert reproduction([96.0, 96.2, 96.4], 99.5).startswith("not reproduced")  # tolerance 2 near 100
    # the two cases: a mean inside the tolerance with a wide interval decides nothing, and a
    # mean outside it whose interval reaches the paper's value is not "not reproduced"
    assert reproduction([55.6, 71.0, 86.6], 68.44) == "not decidable with 3 seeds"
    assert reproduction([89.0, 95.5, 101.5], 99.77) == "not decidable with 3 seeds"


def test_rank_agreement_separates_recovered_precisions_from_chance():
    from ident3d.metrics import rank_agreement

    truth = np.linspace(5, 25, 10)
    recovered = rank_agreement(truth, truth * 0.9 + 1, permutations=2000)
    assert recovered["spearman"] == pytest.approx(1.0) and recovered["p_value"] < 0.01
    assert recovered["null_95"][0] < 0 < recovered["null_95"][1] < 1
    reversed_ = rank_agreement(truth, truth[::-1].copy(), permutations=2000)
    assert reversed_["spearman"] == pytest.approx(-1.0)


@pytest.mark.parametrize("truth", [np.array([25.0] * 5 + [5.0] * 5), np.linspace(5, 25, 10)])
def test_rank_agreement_is_spearmans_rho_over_the_same_permutations(truth):
    """The vectorised null is scipy's spearmanr of each permutation the loop would draw; a permuted
    ranking that ties the observed rho counts towards p (the definition, whatever the rounding)."""
    from ident3d.metrics import TIE_TOLERANCE, rank_agreement

    values = np.round(np.random.default_rng(3).random(10), 1)  # ties on both sides
    got = rank_agreement(truth, values, seed=7, permutations=300)
    rng = np.random.default_rng(7)
    null = np.array([stats.spearmanr(truth, rng.permutation(values)).statistic for _ in range(300)])
    assert got["spearman"] == stats.spearmanr(truth, values).statistic
    assert np.allclose(got["null_95"], np.nanquantile(null, [0.025, 0.975]), rtol=0, atol=1e-12)
    ties = np.abs(null) >= abs(got["spearman"]) - TIE_TOLERANCE
    assert got["p_value"] == (ties.sum() + 1) / 301


@pytest.mark.slow
def test_report_draws_lambda_trajectories_beside_itself(tmp_path):
    from xml.etree import ElementTree

    out = tmp_path / "results"
    budget = Budget(steps=8, batch_size=32, eval_every=4)
    for row in ("A.1", "A.2"):
        synthetic_run.run(get_row(row), 0, budget, out)
    report = tmp_path / "docs" / "report.md"
    softplus = dataclasses.replace(budget, precision_map="softplus")  # same row and seed: its own figure
    synthetic_run.run(get_row("A.1"), 0, softplus, out)
    assert main(["synthetic", "report", "--results", str(out), "--out", str(report)]) == 0
    drawn = sorted((tmp_path / "docs" / "synthetic-figures").glob("*.svg"))
    assert [p.name for p in drawn] == ["lambda-A.1-seed0-b32-n8-lr0.0001-softplus.svg",
                                       "lambda-A.1-seed0-b32-n8-lr0.0001.svg",
                                       "lambda-A.2-seed0-b32-n8-lr0.0001.svg"]
    caption = "![A.1 seed 0, 32 x 8, lr 0.0001, softplus Lambda]"
    assert caption + "(synthetic-figures/lambda-A.1-seed0-b32-n8-lr0.0001-softplus.svg)" in report.read_text()
    drawn = drawn[1:]
    svg = "{http://www.w3.org/2000/svg}"
    anisotropic, isotropic = (ElementTree.parse(p).getroot() for p in drawn)
    assert len(anisotropic.findall(f"{svg}polyline")) == 10  # one learned Lambda per feature
    assert len(isotropic.findall(f"{svg}polyline")) == 1  # one shared precision
    dashed = [e for e in anisotropic.findall(f"{svg}line") if e.get("stroke-dasharray")]
    assert len(dashed) == 10  # the true precisions, 5 ... 25
    texts = [e.text for e in anisotropic.iter(f"{svg}text")]  # a key names each latent's colour
    keys = [f"z{k + 1} (true {5 + 20 * k / 9:.3g})" for k in range(10)]
    assert [t for t in texts if t.startswith("z")] == keys
    swatches = [e.get("fill") for e in anisotropic.findall(f"{svg}rect") if e.get("width") == "10"]
    assert swatches == [e.get("stroke") for e in dashed]  # the key's colours are the true levels' colours
    assert main(["synthetic", "report", "--results", str(out), "--out", str(report)]) == 1  # no overwrite
    # a crafted result may not steer the figure's file name or break the drawing
    first = json.loads(next(out.glob("A.1-*.json")).read_text())
    for crafted in ({**first, "row": "../../escape"},
                    {**first, "curve": [{**first["curve"][0], "precision": ["x"]}]}):
        (out / "zz-crafted.json").write_text(json.dumps(crafted))
        assert main(["synthetic", "report", "--results", str(out), "--out", str(tmp_path / "r2.md")]) == 1
    assert not list(tmp_path.rglob("escape*")) and not (tmp_path / "r2.md").exists()


def test_the_readme_sets_each_aninfonce_arm_beside_its_control_only_with_three_seeds_each(tmp_path):
    import shutil
    from pathlib import Path

    from ident3d.baselines.synthetic.report import readme_block

    committed = Path(__file__).resolve().parents[1] / "baselines/synthetic/results"
    for row, seeds in (("A.1", 3), ("A.2", 3), ("A.3", 3), ("A.4", 1)):
        for seed in range(seeds):
            name = f"{row}-seed{seed}-b256-n10000-lr0.0003.json"
            shutil.copy(committed / name, tmp_path / name)
    text = readme_block(tmp_path)
    assert "A.1 (AnInfoNCE) against A.2 (isotropic InfoNCE), precisions 5 ... 25 linearly spaced" in text
    assert "AnInfoNCE's claim" in text and "so the claim is about MCC" in text  # stated first, in its terms
    # the metric that supports the claim (A.1 over its control) and the one that does not (A.1's own MCC
    # short of the authors' number at this budget, with their log at the same step)
    assert "MCC A.1 minus A.2 +" in text and "A.1's own MCC" in text and "against the authors' 98.99" in text
    assert "the source's own log at step 10,001: 83.30" in text
    assert "At the authors' batch" not in text  # no run at their batch in this folder
    assert "A.3 (AnInfoNCE)" not in text  # its control has one seed
    for name in [f"A.4-seed{seed}-b256-n10000-lr0.0003.json" for seed in (1, 2)] + [
            f"{row}-seed0-b1000-n15000-lr0.0001.json" for row in ("A.1", "A.2")]:
        shutil.copy(committed / name, tmp_path / name)
    text = readme_block(tmp_path)
    assert "A.3 (AnInfoNCE) against A.4 (isotropic InfoNCE), two blocks of equal precisions" in text
    assert text.count("At the authors' batch and learning rate (1,000 x 15,000, lr 0.0001, one seed)") == 1
    assert "the authors' log at step 10,001: R² 97.14, MCC 83.30; A.2 there: MCC" in text
    # two blocks of tied precisions: no strict ranking reaches Spearman 1, and the line says how far one can
    assert text.count("the most any ranking reaches is 0.870") == 1


def test_rows_that_differ_only_in_positives_and_loss_share_their_supervised_runs(tmp_path):
    from ident3d.baselines.synthetic.report import readme_block, supervised_twins

    assert supervised_twins() == [("T1.5", "T2.6")]
    tiny = Budget(steps=4, batch_size=16, eval_every=2)
    first, second = (json.loads(synthetic_run.run(get_row(row), 0, tiny, tmp_path, progress=False,
                                                  column="supervised", device="cpu").read_text())
                     for row in ("T1.5", "T2.6"))
    assert first["curve"] == second["curve"] and first["r2_per_latent"] == second["r2_per_latent"]
    assert "T1.5 and T2.6 share their supervised runs seed by seed" in readme_block(tmp_path)


def test_held_out_r2_is_clipped_per_latent_in_results_and_reports(tmp_path):
    import shutil
    from pathlib import Path

    from ident3d.baselines.synthetic.report import load_results
    from ident3d.metrics import clipped_mean

    assert clipped_mean([0.9, -5.0, 0.5]) == pytest.approx(1.4 / 3)
    committed = Path(__file__).resolve().parents[1] / "baselines/synthetic/results"
    name = "T1.7-seed1-b256-n10000-lr0.001.json"  # one latent read at -526.6 held out
    shutil.copy(committed / name, tmp_path / name)
    stored = json.loads((tmp_path / name).read_text())
    assert stored["r2"] < -90 and min(stored["r2_per_latent"]) < -500
    [loaded] = load_results(tmp_path)
    assert loaded["r2"] == pytest.approx(sum(max(v, 0) for v in stored["r2_per_latent"]) / 10)
    assert 0 <= loaded["r2"] <= 100
