"""Rendered OOD splits: regions parsed and checked, latents drawn exactly inside or outside them, the
committed OOD track consistent, the OOD read-out scores telling an affine code from a nonlinear one,
and the evaluator scoring a real rendered OOD split (or refusing one that is not the track's)."""

from __future__ import annotations

import dataclasses
import logging
import shutil

import numpy as np
import pytest
import torch
from scipy.stats import kstest

from ident3d import tracks
from ident3d.atomic import sha256_array
from ident3d.errors import DatasetError, LatentError, SubmissionError
from ident3d.metrics import Readouts
from ident3d.ood import ood_scores
from ident3d.regions import Region, sample_in_regions, split_latents
from ident3d.submissions import Standardisation
from ident3d.variants import get_variant

V2 = get_variant("v2")
OOD_TRACK = "3dident-v2-64-ood"


@pytest.mark.parametrize(("spec", "words"), [
    ({"object_w": [0.0, 1.0]}, "'object_w' is not a continuous factor of variant v2"),
    ({"object_x": [0.5, 0.1]}, "expected [low, high]"),
    ({"object_x": [0.5, 1.5]}, "expected [low, high]"),
    ({"object_x": [True, 1.0]}, "expected [low, high]"),
    ({}, "expected a table"),
])
def test_a_bad_region_is_refused_by_name(spec, words):
    with pytest.raises(LatentError, match="region 'r'") as caught:
        Region.parse("r", spec, V2)
    assert words in str(caught.value)
    with pytest.raises(LatentError, match="not a continuous factor"):
        Region.parse("r", {"object_class": [0, 1]}, get_variant("objects"))


def test_latents_are_drawn_exactly_inside_or_outside_with_the_marginal_restricted():
    band = Region.parse("band", {"object_y": [0.6, 1.0]}, V2)
    corner = Region.parse("corner", {"spotlight_angle": [0.4, 1.0], "object_hue": [0.4, 1.0]}, V2)
    inside = sample_in_regions(V2, 4000, seed=3, inside=band)
    assert inside.shape == (4000, 10) and band.contains(inside, V2.names).all()
    y, x = inside[:, V2.names.index("object_y")], inside[:, V2.names.index("object_x")]
    assert kstest((y - 0.6) / 0.4, "uniform").pvalue > 1e-3  # uniform on the band
    assert kstest((x + 1) / 2, "uniform").pvalue > 1e-3  # the other latents keep their marginal
    outside = sample_in_regions(V2, 4000, seed=3, outside=[band, corner])
    assert not (band.contains(outside, V2.names) | corner.contains(outside, V2.names)).any()
    spot, hue = outside[:, V2.names.index("spotlight_angle")], outside[:, V2.names.index("object_hue")]
    assert (spot >= 0.4).any() and (hue >= 0.4).any()  # each alone is seen: only the corner is held out
    assert np.array_equal(outside, sample_in_regions(V2, 4000, seed=3, outside=[band, corner]))
    assert not np.array_equal(outside, sample_in_regions(V2, 4000, seed=4, outside=[band, corner]))
    tiny = Region.parse("tiny", {name: [0.999, 1.0] for name in V2.names}, V2)
    with pytest.raises(LatentError, match="keeps almost nothing"):
        sample_in_regions(V2, 1, seed=0, inside=tiny)


def test_the_ood_track_holds_its_regions_out_of_training_and_in_its_ood_splits():
    track = tracks.get_track(OOD_TRACK)
    regions = {name: Region.parse(name, spec, V2) for name, spec in track.regions.items()}
    assert set(regions) == {"interpolation", "extrapolation", "composition"}
    for name, spec in track.splits.items():
        raw = split_latents(track, name)
        assert len(raw) == spec.n and sha256_array(np.ascontiguousarray(raw)) == spec.latents_sha256
        for region_name, region in regions.items():
            share = region.contains(raw, V2.names).mean()
            if spec.region is None:
                assert share == 0.0, f"{name} has points in {region_name}"
            elif region_name == spec.region:
                assert share == 1.0


def test_ood_scores_tell_an_affine_code_from_a_nonlinear_one():
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, (3000, 4))
    held = z[:, 0] > 0.6
    z_in, z_out = z[~held], z[held]
    half = len(z_in) // 2
    kernel = [{"alpha": 0.01, "gamma": 1.0}] * 4
    names = [f"z{j}" for j in range(4)]

    def scores(encode):
        h_in, h_out = encode(z_in), encode(z_out)
        return ood_scores(Readouts.fit(h_in[:half], z_in[:half], kernel), z_in[half:], h_in[half:], names,
                          {"z0 > 0.6": (z_out, h_out)})

    mix = rng.normal(size=(4, 4))
    affine = scores(lambda v: v @ mix + 1.0)
    assert affine["splits"][0]["per_latent"][0]["linear_r2"] > 0.999  # an affine code extrapolates
    bent = scores(lambda v: np.tanh(3 * v))  # invertible, informative, not affine
    in_dist, out = bent["in_distribution"]["per_latent"][0], bent["splits"][0]["per_latent"][0]
    assert out["linear_r2"] < in_dist["linear_r2"] - 0.1
    assert out["kernel_r2"] < in_dist["kernel_r2"] - 0.1
    assert bent["splits"][0]["n"] == held.sum()


def test_a_constant_latent_scores_zero_whatever_the_rounding_of_its_variance():
    rng = np.random.default_rng(2021)
    z = rng.uniform(-1, 1, (600, 3))
    z[:, 1] = 0.2
    h = z + 0.05 * rng.normal(size=z.shape)
    held = z[:, 0] > 0.5
    kernel = [{"alpha": 0.01, "gamma": 1.0}] * 3
    fit, score = np.flatnonzero(~held)[:100], np.flatnonzero(~held)[100:]
    assert z[score, 1].var() != 0  # numpy's variance of the constant is rounding noise here, not 0
    result = ood_scores(Readouts.fit(h[fit], z[fit], kernel), z[score], h[score], ["a", "b", "c"],
                        {"a > 0.5": (z[held], h[held])})
    for rows in (result["in_distribution"]["per_latent"], result["splits"][0]["per_latent"]):
        assert rows[1]["linear_r2"] == rows[1]["kernel_r2"] == 0.0
        assert rows[0]["linear_r2"] > 0.9  # the latents that vary are still read


def test_an_ood_split_is_standardised_on_the_in_distribution_scale_so_its_shift_survives():
    rng = np.random.default_rng(1)
    h = rng.normal(3.0, 2.0, (500, 3)) * np.array([1e-150, 1.0, 1e150])
    standardise = Standardisation.fit(h)
    inside = standardise(h, "test")
    assert np.allclose(inside.mean(0), 0.0, atol=1e-12) and np.allclose(inside.std(0), 1.0)
    shifted = standardise(h + 2.0 * h.std(0), "test-extrapolation")  # a region two spreads out
    assert np.allclose(shifted.mean(0), 2.0)  # on its own statistics it would be re-centred to 0
    with pytest.raises(SubmissionError, match="overflow on the in-distribution scale"):
        standardise(np.full((4, 3), 1e300), "test-extrapolation")


@pytest.fixture(scope="module")
def tiny_ood(tmp_path_factory):
    """The OOD track at 32 px with a 16-image test split and an 8-image extrapolation split, rendered."""
    from ident3d.render.job import plan_track_job, render_split

    base = tracks.get_track(OOD_TRACK)
    splits = {"test": tracks.SplitSpec(n=16, seed=1, exclude=tuple(base.regions)),
              "test-extrapolation": tracks.SplitSpec(n=8, seed=3, region="extrapolation")}
    track = dataclasses.replace(base, name="tiny-ood", resolution=32, splits=splits,
                                render={**base.render, "samples": 2}, recheck={"images": 2, "tolerance": 2.0})
    splits = {name: dataclasses.replace(spec, latents_sha256=sha256_array(split_latents(track, name)))
              for name, spec in splits.items()}
    track = dataclasses.replace(track, splits=splits)
    root = tmp_path_factory.mktemp("ood")
    for name in splits:
        render_split(plan_track_job(root / "data", track, name), workers=1, progress=False)
    return track, root / "data"


@pytest.mark.blender
@pytest.mark.slow
def test_the_evaluator_scores_the_rendered_ood_splits_and_refuses_a_forged_one(
        tiny_ood, tmp_path, monkeypatch, caplog):
    from ident3d.baselines.pixels import export_pixel_readout
    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import encode, evaluate
    from ident3d.protocols import REGISTRY

    track, data = tiny_ood
    known = {**tracks.tracks(), track.name: track}
    monkeypatch.setattr(tracks.registry, "tracks", lambda: known)
    model = export_pixel_readout(tmp_path / "pixels.pt2", 32)
    result = evaluate(model, data, progress=False).document  # validated against the schema inside
    assert result["dataset"]["track"] == track.id
    (split,) = result["ood"]["splits"]
    assert split["split"] == "test-extrapolation" and split["n"] == 8
    assert result["ood"]["protocol"] == "ident3d-ood" and len(split["per_latent"]) == 10
    # the OOD section is the read-outs of the model's own features: one standardisation for every split
    mean_colour = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())  # 3 features
    evaluated = evaluate(mean_colour, data, progress=False).document["ood"]
    sets = {name: ThreeDIdent(data, name) for name in ("test", "test-extrapolation")}
    own = {name: encode(mean_colour, d, np.arange(len(d)), torch.device("cpu"), 16, False).astype(np.float64)
           for name, d in sets.items()}
    continuous = sets["test"].variant_spec.continuous_columns
    expected = REGISTRY["ident3d-eval-v1"].score(
        sets["test"].latents[:, continuous].astype(np.float64), own["test"],
        ood={"test-extrapolation": (sets["test-extrapolation"].latents[:, continuous].astype(np.float64),
                                    own["test-extrapolation"])}).companions["ood"]
    pairs = zip(evaluated["splits"][0]["per_latent"], expected["splits"][0]["per_latent"], strict=True)
    for got, want in pairs:
        assert got["linear_r2"] == pytest.approx(want["linear_r2"], abs=1e-6), got["factor"]

    # a fresh draw of an OOD track draws each region too, scored by the same read-outs beside the
    # public region split
    fresh = evaluate(model, data, fresh=8, fresh_seed=3, progress=False).document["fresh"]
    (region,) = fresh["regions"]
    assert region["split"] == "test-extrapolation" and region["n"] == 8
    assert set(region["gap"]) == {"linear_r2", "mcc_pearson"}

    forged = tmp_path / "forged"
    shutil.copytree(data, forged)
    shutil.rmtree(forged / "test-extrapolation")
    shutil.copytree(data / "test", forged / "test-extrapolation")  # in-distribution images under its name
    with pytest.raises(DatasetError, match="not tiny-ood@1's split test-extrapolation"):
        evaluate(model, forged, progress=False)

    shutil.rmtree(forged / "test-extrapolation")  # not rendered: scored without it, and said so
    with caplog.at_level(logging.WARNING):
        plain = evaluate(model, forged, progress=False).document
    assert "ood" not in plain and "test-extrapolation" in caplog.text


def test_the_ood_chart_keys_give_percents_as_its_axis_does():
    from ident3d.baselines.ood_report import ood_svg

    def scores(r2):
        return {"linear_r2": r2, "per_latent": [{"factor": "object_x", "linear_r2": r2}]}

    entry = {"id": "E", "dataset": "3dident-ood-64@1", "result": {"ood": {
        "in_distribution": scores(0.542), "splits": [{"split": "interpolation", **scores(0.31)}]}}}
    svg = ood_svg(entry)
    assert "in distribution (54.2%)" in svg and "interpolation (31.0%)" in svg
    assert "R² (%)" in svg and "(0.54)" not in svg
