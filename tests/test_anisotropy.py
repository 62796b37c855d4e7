"""AnInfoNCE against its controls on the CPU track (ident3d.baselines.anisotropy): the section of
docs/cpu-track.md must be what the committed entries give, and its numbers what the entries and the
logged Lambda say."""

import json

import pytest

import ident3d.baselines.anisotropy as anisotropy
from ident3d.baselines.anisotropy import learned_precision, section
from ident3d.variants import get_variant


def test_each_latent_gets_the_precision_of_the_feature_matched_to_it():
    curve = {"lambda": [{"step": 50, "precision": [9.0] * 3}, {"step": 1200, "precision": [1.0, 2.0, 3.0]}]}
    assert learned_precision(curve, [2, 0, 1]) == (1200, [3.0, 1.0, 2.0])
    shared = {"lambda": [{"step": 1200, "precision": [4.0]}]}  # isotropic: one value for every latent
    assert learned_precision(shared, [2, 0, 1]) == (1200, [4.0, 4.0, 4.0])


def _entry(folder, linear, mcc, per_latent_r2, matching):
    per_latent = [{"factor": f, "linear_r2": r, "nonlinear_r2": r + 0.05, "mcc_pearson": mcc}
                  for f, r in zip(get_variant("v2").names, per_latent_r2, strict=True)]
    return {"id": f"Ident2026CpuTrack_{folder}", "protocol": "ident3d-eval-v1",
            "metrics": {"linear_r2": linear, "nonlinear_r2": linear + 0.05, "mcc_pearson": mcc},
            "result": {"per_latent": per_latent, "matching": matching}}


def test_three_seeds_per_arm_give_intervals_and_the_learned_order_is_ranked(tmp_path, monkeypatch):
    monkeypatch.setattr(anisotropy, "CURVES", tmp_path)
    scale = [0.0877, 0.1115, 0.0975, 0.0661, 0.0628, 0.0599, 0.0746, 0.0804, 0.0700, 0.134]
    truth = [1 / s ** 2 for s in scale]
    reversed_matching = list(range(9, -1, -1))
    entries = []
    for seed in range(3):
        run = f"v2pairs-moderate-aninfonce-sphere-s{seed}"
        read = [0.6] * 6 + [0.1] * 4  # six latents read, four not
        entries.append(_entry(run, 0.60 + 0.01 * seed, 0.50 + 0.01 * seed, read, reversed_matching))
        # the features hold the precisions in reverse latent order; the matching undoes it
        (tmp_path / f"{run}.json").write_text(json.dumps(
            {"lambda": [{"step": 1000, "precision": [p / 2 for p in truth[::-1]]},
                        {"step": 1200, "precision": truth[::-1]}]}))
        iso = f"v2pairs-moderate-aninfonce-isotropic-sphere-s{seed}"
        entries.append(_entry(iso, 0.60 + 0.01 * seed, 0.30 + 0.01 * seed, [0.5] * 10, list(range(10))))
        (tmp_path / f"{iso}.json").write_text(json.dumps(
            {"lambda": [{"step": 1000, "precision": [5.0]}, {"step": 1200, "precision": [7.5]}]}))
    entries.append(_entry("v2pairs-moderate-normal-unbounded-s0", 0.4, 0.2, [0.4] * 10, list(range(10))))
    entries.append(_entry("v2-normal-box-s0", 0.9, 0.9, [0.9] * 10, list(range(10))))  # another data set

    text = section(entries)
    assert "| AnInfoNCE | `aninfonce-sphere` | 3 | 61.00 ± 1.00 | 66.00 ± 1.00 | 51.00 ± 1.00 |" in text
    row = next(line for line in text.splitlines() if line.startswith("| AnInfoNCE - isotropic control |"))
    assert "| +0.00; not decidable" not in row  # identical R² spreads: an interval
    assert row.endswith("| +20.00 [+17.73, +22.27]; higher |")
    l2 = next(line for line in text.splitlines() if line.startswith("| AnInfoNCE - L2 InfoNCE"))
    assert "not decidable with 1 seed" in l2  # one seed of the L2 arm: no direction
    assert "| ground_hue | 0.134 | 55.7 | 10.0 / 50.0 / 40.0 | 15.0 / 55.0 / 45.0 |" in text
    ranked = "(step 1,200, 1,200, 1,200) with the true precisions 1/scale²: +1.00, +1.00, +1.00 over " \
        "the ten latents; +1.00 (6 latents), +1.00 (6 latents), +1.00 (6 latents) over the latents the " \
        "seed reads"
    assert ranked in text
    assert "still changed by up to 100, 100, 100 percent" in text  # doubled over the last 200 steps
    assert "one learned precision: 7.5, 7.5, 7.5, changed over the last 200 logged steps by 50, 50, 50 " \
        "percent." in text


@pytest.mark.parametrize("preset", ["aninfonce-sphere", "aninfonce-isotropic-sphere"])
def test_the_arms_scales_are_the_pairs_scales(preset):
    from ident3d.baselines.config import load_preset
    from ident3d.baselines.experiment import load_experiment

    pairs = load_experiment(anisotropy.EXPERIMENT).data[anisotropy.DATA]["pairs"]
    assert pairs["scale"] == list(load_preset(preset).scale)
