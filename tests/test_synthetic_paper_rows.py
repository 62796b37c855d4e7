"""Every row of the paper's Tables 1 and 2 is a row of the synthetic benchmark, with the paper's setting
and numbers: this table is Tables 1 and 2 of Zimmermann et al. (ICML 2021, Section 4.1), written out
here on its own so that an edit of rows.toml that departs from the paper fails."""

# ruff: noqa: E501  (the paper's table, one row per line)
from __future__ import annotations

import pytest

from ident3d.baselines.synthetic.table import rows

# id: (space, marginal, conditional, conditional scale, model space, loss, p, matches the theory,
#      Identity, Supervised, Unsupervised) in percent, mean and sd; None where the paper prints none.
PAPER = {
    "T1.1": ("sphere", "uniform", "vmf", 1.0, "sphere", "vmf", None, True, (66.98, 2.79), (99.71, 0.05), (99.42, 0.05)),
    "T1.2": ("sphere", "uniform", "vmf", 10.0, "sphere", "vmf", None, False, None, None, (99.86, 0.01)),
    "T1.3": ("sphere", "uniform", "laplace", 0.05, "sphere", "vmf", None, False, None, None, (99.91, 0.01)),
    "T1.4": ("sphere", "uniform", "normal", 0.05, "sphere", "vmf", None, False, None, None, (99.86, 0.00)),
    "T1.5": ("box", "uniform", "normal", 0.05, "unbounded", "lp", 2, False, (67.93, 7.40), (99.78, 0.06), (99.60, 0.02)),
    "T1.6": ("box", "uniform", "laplace", 0.05, "unbounded", "lp", 2, False, None, None, (99.64, 0.02)),
    "T1.7": ("box", "uniform", "laplace", 0.05, "unbounded", "lp", 3, False, None, None, (99.70, 0.02)),
    "T1.8": ("box", "uniform", "normal", 0.05, "unbounded", "lp", 3, False, None, None, (99.69, 0.02)),
    "T1.9": ("sphere", "normal", "laplace", 0.05, "sphere", "vmf", None, False, (63.37, 2.41), (99.70, 0.07), (99.02, 0.01)),
    "T1.10": ("sphere", "normal", "normal", 0.05, "sphere", "vmf", None, False, None, None, (99.02, 0.02)),
    "T1.11": ("unbounded", "laplace", "normal", 1.0, "unbounded", "lp", 2, False, (62.49, 1.65), (99.65, 0.04), (98.13, 0.14)),
    "T1.12": ("unbounded", "normal", "normal", 1.0, "unbounded", "lp", 2, False, (63.57, 2.30), (99.61, 0.17), (98.76, 0.03)),
    "T2.1": ("box", "uniform", "laplace", 0.05, "box-sigmoid", "lp", 1, True, (46.55, 1.34), (99.93, 0.03), (98.62, 0.05)),
    "T2.2": ("box", "uniform", "gennorm", 0.05, "box-sigmoid", "lp", 3, True, None, None, (99.90, 0.06)),
    "T2.3": ("box", "uniform", "normal", 0.05, "box-sigmoid", "lp", 2, False, None, None, (99.77, 0.01)),
    "T2.4": ("box", "uniform", "laplace", 0.05, "box-sigmoid", "lp", 2, False, None, None, (99.76, 0.02)),
    "T2.5": ("box", "uniform", "gennorm", 0.05, "box-sigmoid", "lp", 1, False, None, None, (98.80, 0.02)),
    "T2.6": ("box", "uniform", "laplace", 0.05, "unbounded", "lp", 1, False, None, (99.97, 0.03), (98.57, 0.02)),
    "T2.7": ("box", "uniform", "gennorm", 0.05, "unbounded", "lp", 3, False, None, None, (99.85, 0.01)),
    "T2.8": ("box", "uniform", "normal", 0.05, "unbounded", "lp", 2, False, None, None, (58.26, 3.00)),
    "T2.9": ("box", "uniform", "laplace", 0.05, "unbounded", "lp", 2, False, None, None, (59.67, 2.33)),
    "T2.10": ("box", "uniform", "normal", 0.05, "unbounded", "lp", 3, False, None, None, (43.80, 2.15)),
}


@pytest.mark.parametrize("row_id", PAPER)
def test_a_paper_row_has_the_papers_setting_numbers_and_source(row_id):
    space, marginal, conditional, scale, model_space, loss, p, matches, *columns = PAPER[row_id]
    row = rows()[row_id]
    process, model = row.process, row.model
    assert (process.space, process.marginal, process.conditional, process.scale) == (
        space, marginal, conditional, scale)
    assert process.marginal_scale == 1.0 and (process.beta == 3.0) == (conditional == "gennorm")
    assert (model.space, model.loss, model.negatives) == (model_space, loss, "anchors")
    assert p is None or model.p == p
    assert model.tau == 1.0 and (row.theory == "identifiable") == matches
    table, number = row_id[1], int(row_id.split(".")[1])
    metric = "r2" if table == "1" else "mcc"
    names = ("identity", "supervised", "unsupervised")
    expected = {name: list(value) for name, value in zip(names, columns, strict=True) if value}
    assert row.paper == {metric: expected}
    assert row.paper_source == f"Zimmermann et al. (ICML 2021), Table {table}, row {number}"


def test_no_setting_of_this_project_carries_a_paper_id():
    own = [row for row in rows().values() if row.id not in PAPER]
    assert own and all(row.id[0] in "AD" for row in own)
    assert {row.id: row.run_id for row in rows().values() if row.run_id != row.id} == {
        "T2.8": "T1.5", "T2.9": "T1.6", "T2.10": "T1.8"}


def test_the_aninfonce_rows_end_on_the_unit_sphere_as_the_authors_encoder_does():
    """brendel-group/AnInfoNCE run.sh trains with --p 0, so main_mlp.py ends the encoder in its
    fixed_sphere: the features it scores are normalised."""
    for row_id in ("A.1", "A.2", "A.3", "A.4"):
        assert rows()[row_id].model.space == "unit-sphere", row_id
