"""Learning curves (ident3d.baselines.learning_curves): a real tiny run's logged evaluations are kept,
drawn and tabulated; the committed figures and table are what the kept curves give."""

import json

import pytest
from conftest import write_fake_split

from ident3d.baselines.config import load_preset
from ident3d.baselines.learning_curves import (
    curve_chart,
    figures,
    keep_curves,
    load_curves,
    rotations_paragraph,
    section,
)
from ident3d.baselines.train import read_log, train

EXPERIMENT = """entry_prefix = "Test2026Curve"
[budgets]
tiny = { steps = 6, batch_size = 8, lr = 1e-3 }
[data.v2]
track = "3dident-v2-64"
[[runs]]
name = "tiny-curve"
data = "v2"
preset = "smoke"
budget = "tiny"
set = { eval_every = 2 }
"""


@pytest.mark.slow
def test_a_runs_logged_evaluations_become_its_curve_figure_and_table(tmp_path):
    write_fake_split(tmp_path / "data", "train", n=60, size=32)
    write_fake_split(tmp_path / "data", "test", n=40, size=32, seed=1)
    config = load_preset("smoke", data=str(tmp_path / "data"), iterations=6, batch_size=8, log_every=1,
                         checkpoint_every=2, eval_every=2, eval_images=40, device="cpu")
    train(config, tmp_path / "out/runs/tiny-curve", progress=False)
    (tmp_path / "experiment.toml").write_text(EXPERIMENT)
    (tmp_path / "out/runs/unrun").mkdir()  # a run folder of another experiment is ignored

    kept = keep_curves(tmp_path / "out", tmp_path / "experiment.toml", tmp_path / "curves")
    assert kept == [tmp_path / "curves/tiny-curve.json"]
    curve = json.loads(kept[0].read_text())
    logged = [r["eval"] for r in read_log(tmp_path / "out/runs/tiny-curve/log.jsonl") if "eval" in r]
    assert [p["step"] for p in curve["points"]] == [2, 4, 6] and curve["last_step"] == 6
    assert [p["linear_r2_per_latent"] for p in curve["points"]] == [e["linear_r2_per_latent"] for e in logged]
    assert curve["factors"][0] == "object_x" and len(curve["factors"]) == 10
    assert curve["budget"] == {"steps": 6, "batch_size": 8, "lr": 1e-3} and curve["preset"] == "smoke"

    # a run that does not ask for a curve keeps none: the default's one evaluation is no curve
    (tmp_path / "plain.toml").write_text(EXPERIMENT.replace("set = { eval_every = 2 }", ""))
    assert keep_curves(tmp_path / "out", tmp_path / "plain.toml", tmp_path / "plain") == []

    # seeds of one group share a table: the mean over seeds at each step, ± sample sd for the mean row
    twin = {**json.loads(json.dumps(curve)), "run": "tiny-curve-s1"}  # same group, another seed
    for point in twin["points"]:
        point["linear_r2"] += 0.02
    row = next(line for line in section([curve, twin]).splitlines() if line.startswith("| mean |"))
    first = curve["points"][0]["linear_r2"]
    assert row.count(" ± ") == 0 and "2 seeds" in section([curve, twin])  # steps 2, 4, 6 are not columns
    with_step = {**curve, "points": [{**curve["points"][0], "step": 300}]}
    twin_step = {**twin, "points": [{**twin["points"][0], "step": 300}]}
    row = next(line for line in section([with_step, twin_step]).splitlines() if line.startswith("| mean |"))
    assert row.startswith(f"| mean | {100 * (first + 0.01):.1f} ± {100 * 0.02 / 2 ** 0.5:.1f} | — |")

    svg = curve_chart(curve).svg()
    assert svg.count("<polyline") == 20 and svg.count("<circle") == 30  # a line and its key per latent
    assert "logged to step 6 of 6" in svg
    made = figures([curve, twin])  # the overview: one line per run, one key per group
    assert set(made) == {"overview.png", "tiny-curve.png", "tiny-curve-s1.png"}
    assert made["overview.png"].svg().count("<polyline") == 2 and "2 seeds" in made["overview.png"].svg()
    table = section([curve])
    assert "| latent | 300 | 600 | 1,200 | 2,400 | 4,800 | 7,200 |" in table
    assert table.count("| — | — | — | — | — | — |") == 11  # no step of the table was logged: mean + 10


@pytest.mark.slow
def test_an_aninfonce_runs_lambda_is_kept_and_drawn(tmp_path):
    write_fake_split(tmp_path / "data", "train", n=60, size=32)
    config = load_preset("aninfonce-sphere", data=str(tmp_path / "data"), iterations=4, batch_size=8,
                         log_every=1, checkpoint_every=2, eval_every=0, device="cpu")
    train(config, tmp_path / "out/runs/tiny-curve", progress=False)
    (tmp_path / "experiment.toml").write_text(EXPERIMENT)
    (curve_file,) = keep_curves(tmp_path / "out", tmp_path / "experiment.toml", tmp_path / "curves")
    curve = json.loads(curve_file.read_text())
    assert curve["points"] == [] and [p["step"] for p in curve["lambda"]] == [1, 2, 3, 4]
    assert all(len(p["precision"]) == 10 for p in curve["lambda"])
    assert set(figures([curve])) == {"lambda-tiny-curve.png"}
    assert figures([curve])["lambda-tiny-curve.png"].svg().count("<polyline") == 10
    assert "learned Lambda per output feature at step 4: " in section([curve])
    shared = {**curve, "lambda": [{"step": 4, "precision": [3.0]}]}  # an isotropic run's one precision
    assert "learned precision shared by every feature at step 4: 3.00." in section([shared])


def test_a_kept_curve_may_not_name_a_file_outside_its_folder(tmp_path):
    import pytest

    keys = {"group": "g", "preset": "smoke", "budget": {}, "factors": [], "last_step": 0, "points": [],
            "lambda": []}
    (tmp_path / "evil.json").write_text(json.dumps({"run": "../../evil", **keys}))
    with pytest.raises(SystemExit, match="is not this file's name or not a plain folder name"):
        load_curves(tmp_path)
    for crafted in ("{", json.dumps({"run": "evil"}), json.dumps([1, 2])):
        (tmp_path / "evil.json").write_text(crafted)
        with pytest.raises(SystemExit, match=r"^error: .*evil\.json: .*Fix: "):
            load_curves(tmp_path)


def test_the_kept_curve_past_the_budget_is_v2_normal_box_s0_continued():
    """docs/cpu-track.md reads the 4,800-step curve as s0 trained on: where both logged a step, they agree."""
    curves = {c["run"]: c for c in load_curves()}
    past, entry = curves["v2-normal-box-curve"], curves["v2-normal-box-s0"]
    logged = {p["step"]: p for p in past["points"]}
    assert past["last_step"] > entry["last_step"]
    for point in entry["points"]:
        again = logged[point["step"]]
        assert abs(again["linear_r2"] - point["linear_r2"]) < 1e-9
        assert abs(again["mcc"] - point["mcc"]) < 1e-9
        assert again["linear_r2_per_latent"] == point["linear_r2_per_latent"]


def test_what_the_curve_says_is_what_the_kept_curves_show():
    """docs/cpu-track.md's hand reading of the curve, checked against the kept curves it reads."""
    curves = {c["run"]: c for c in load_curves()}
    past = curves["v2-normal-box-curve"]
    factors = past["factors"]
    rotations = [i for i, name in enumerate(factors) if name.startswith("rotation_")]
    at = {p["step"]: p["linear_r2_per_latent"] for p in past["points"]}
    budget, last = at[curves["v2-normal-box-s0"]["last_step"]], at[past["last_step"]]
    # "none of the three rotations leaves zero at any logged step" (R² shown as 0 below 0.05 points)
    assert len(rotations) == 3
    assert all(r2[i] < 5e-4 for r2 in at.values() for i in rotations)
    # "four times the entries' steps raise every latent normal-box already read at its budget,
    # the spotlight hue most"
    assert past["last_step"] == 4 * curves["v2-normal-box-s0"]["last_step"]
    read = [i for i in range(len(factors)) if i not in rotations]
    assert all(last[i] > budget[i] for i in read)
    assert max(read, key=lambda i: last[i] - budget[i]) == factors.index("spotlight_hue")
    # "the supervised topline reads all three rotations in every seed by its third logged step
    # and keeps improving on them to its last"
    for seed in ("v2-supervised", "v2-supervised-s1", "v2-supervised-s2"):
        steps = sorted(curves[seed]["points"], key=lambda p: p["step"])
        third, final = steps[2]["linear_r2_per_latent"], steps[-1]["linear_r2_per_latent"]
        assert all(third[i] > 0.05 for i in rotations)
        assert all(final[i] > third[i] for i in rotations)


def test_the_rotations_paragraph_reads_every_evaluation_and_names_the_latents_missed():
    factors = ["object_x", "rotation_alpha", "rotation_beta", "spotlight_hue"]

    def curve(run, preset, *rows):
        points = [{"step": 100 * (i + 1), "linear_r2_per_latent": r} for i, r in enumerate(rows)]
        return {"run": run, "preset": preset, "factors": factors, "points": points,
                "last_step": 100 * len(rows)}

    curves = [curve("a", "normal-box", [0.5, 0.0, 0.3, 0.1], [0.9, -0.02, 0.01, 0.2]),
              curve("b", "laplace-box", [0.95, 0.0, 0.0, 0.9]),
              curve("top", "supervised", [0.99, 0.8, 0.7, 0.98]),
              curve("v2pairs-rotations-normal-box", "normal-box", [0.1, 0.2, 0.3, 0.0], [0.0, 0.6, 0.5, 0.1])]
    text = rotations_paragraph(curves)
    assert "all 3 logged evaluations of the 2 contrastive runs (2 presets)" in text
    assert "lies at -2.0 to 30.0 %" in text  # an early step counts: the whole curve, not its end
    assert "longest run's too (a, to step 200: -2.0 to 30.0 %)" in text
    assert "other 2 latents read 20.0 to 95.0 %" in text and "spotlight_hue in 1 of 2 runs." in text
    assert "topline (1 runs, to step 100) reads the rotations at 70.0 to 80.0 %" in text
    assert "weakest latent: rotation_beta." in text
    # a diagnostic run is read apart: not among the contrastive runs above, its rotations named
    assert ("v2pairs-rotations-normal-box (normal-box on exactly rendered positives that move only the "
            "rotations: Normal scale 0.1 on them, 1e-4 on the other latents) reads the rotations at 20.0 "
            "to 60.0 % across its 2 evaluations (at step 200: rotation_alpha 60.0, rotation_beta 50.0 %) "
            "and the other 2 at 0.0 to 10.0 % (median 5.0 %)") in text
    assert "v2-normal-box-batch512 (normal-box in batches of 512 pairs" in text and "is not run yet" in text
    assert text.endswith(".")
    assert rotations_paragraph([c for c in curves if c["preset"] == "supervised"]) == ""


@pytest.mark.parametrize(("rotations_at_the_end", "reading"), [
    (0.6, "the rotations stay readable, so the from-scratch runs have not learned them yet"),
    (0.02, "the rotations decay to 0, so the loss does not keep them at this budget"),
    (0.3, "partly kept")])
def test_the_settling_paragraph_reads_the_rotations_against_its_trunk(rotations_at_the_end, reading):
    from ident3d.baselines.learning_curves import SETTLING_RUN, SETTLING_TRUNK, settling_paragraph

    factors = ["object_x", "rotation_alpha", "rotation_beta", "rotation_gamma"]

    def curve(run, preset, steps, rotation):
        points = [{"step": s, "linear_r2": 0.5, "mcc": 0.5,
                   "linear_r2_per_latent": [0.9, rotation(s), rotation(s), rotation(s)],
                   "kernel_r2_per_latent": [0.9, rotation(s) + 0.01, rotation(s), rotation(s)]}
                  for s in steps]
        return {"run": run, "group": run, "preset": preset, "factors": factors, "last_step": steps[-1],
                "budget": {"steps": steps[-1], "batch_size": 128, "lr": 1e-3}, "points": points, "lambda": []}

    trunk = curve(SETTLING_TRUNK, "supervised", [300, 1500], lambda s: 0.7)
    tuned = curve(SETTLING_RUN, "normal-box", [100, 600, 1200],
                  lambda s: 0.7 if s < 1200 else rotations_at_the_end)
    text = settling_paragraph([trunk, tuned])
    assert reading in text and "One seed" in text
    assert "step 1,200: " + " / ".join([f"{100 * rotations_at_the_end:.1f}"] * 3) in text
    assert "has no kept curve yet" in settling_paragraph([trunk])
    assert "stopped at step" not in text
    stopped = curve(SETTLING_RUN, "normal-box", [100, 400], lambda s: 0.7)
    stopped["budget"]["steps"] = 1200
    assert "the run stopped at step 400 of 1,200" in settling_paragraph([trunk, stopped])
    assert "neither reading is decided yet" in settling_paragraph([trunk, stopped])
