"""The CPU-track report groups seeds, checks the paper's orderings, and its entries are verified."""

import json
import re

import pytest
from conftest import write_fake_split
from test_leaderboard import fake_result

from ident3d import atomic
from ident3d.baselines.baseline_entries import add_entries, rescore_entries
from ident3d.baselines.experiment import load_experiment
from ident3d.baselines.pixels import export_pixel_readout
from ident3d.baselines.reproduction import summarize
from ident3d.errors import ResultError
from ident3d.evaluation import evaluate
from ident3d.leaderboard.entries import load_entries


def write_run(out, name, r2, mcc, hue_r2=None, positives="latent", trained=True):
    folder = out / "runs" / name
    folder.mkdir(parents=True)
    group = re.sub(r"-s\d+$", "", name)
    data, preset = group.split("-", 1)
    (folder / "experiment.json").write_text(json.dumps({"group": group, "data": data, "preset": preset}))
    v1 = fake_result(r2, mcc)
    for p in v1["per_latent"][7:]:
        p["linear_r2"] = r2 if hue_r2 is None else hue_r2
    (folder / "result.json").write_text(json.dumps(v1))
    (folder / "result-cl-ica-2021.json").write_text(json.dumps(fake_result(r2, mcc, protocol="cl-ica-2021")))
    if trained:
        config = {"iterations": 800, "batch_size": 256, "positives": positives, "lr": 1e-3, "seed": 0,
                  "conditional": "normal", "scale": 0.1, "loss": "lp", "space": "box"}
        (folder / "config.json").write_text(json.dumps(config))
        # two equal log windows at 1024 and 512 images/s: 683 images/s overall (the harmonic mean),
        # so 800 steps of 512 images take 10.0 minutes; the eval record has no rate and is skipped
        (folder / "log.jsonl").write_text('{"images_per_s": 1024}\n{"images_per_s": 512}\n{"eval": {}}\n')


@pytest.mark.slow
def test_summary_groups_seeds_and_reports_orderings_and_hues(tmp_path):
    for seed, r2 in enumerate((0.88, 0.9, 0.92)):
        write_run(tmp_path, f"v2-normal-box-s{seed}", r2, 0.9, hue_r2=0.95)
    write_run(tmp_path, "v2-normal-unbounded", 0.88, 0.6)
    write_run(tmp_path, "v2-normal-sphere-vmf", 0.87, 0.5)
    write_run(tmp_path, "v2-laplace-box", 0.8, 0.8)
    write_run(tmp_path, "v2-supervised", 0.99, 0.99, positives="anchors")
    write_run(tmp_path, "v2-pixels", 0.3, 0.2, trained=False)
    write_run(tmp_path, "legacy-normal-box-s0", 0.8, 0.8, hue_r2=0.4)
    text = summarize(tmp_path)
    assert "| v2-normal-box | 3 | 90.00 ± 2.00 | 90.00 ± 0.00 |" in text  # mean ± sample std over seeds
    assert "| 800 × 256 | 683 | 10.0 |" in text
    assert "| v2-supervised | 1 | 99.00 | 99.00 | 99.00 | 99.00 | 99.00 | 800 × 256 | 683 | 5.0 |" in text
    assert "| v2-pixels | 1 | 30.00 | 20.00 | 30.00 | 30.00 | 20.00 | none | – | – |" in text
    assert ("| Sphere reads less than Box | R² | normal-box 90.00 (n=3) vs normal-sphere-vmf 87.00 (n=1): "
            "difference +3.00; **not decidable with 1 seed** |") in text
    # a run folder has the pixel read-out's one sample, not its spread (baselines/pixel_splits.py)
    assert ("normal-box 90.00 (n=3) vs pixels 30.00 (n=1): difference +60.00; **not decidable with 1 seed**"
            in text)
    assert "| Image augmentations read less than latent positives (both Sphere) | R² | not measured |" in text
    assert "| object_hue | 95.00 / 90.00 | 40.00 / 80.00 |" in text


@pytest.mark.slow
def test_anisotropic_section_matches_lambda_to_latents_and_states_the_verdict(tmp_path):
    """Lambda is read through the evaluator's feature matching; the widest-scale latents decide."""
    data = tmp_path / "data" / "v2pairs-64"
    write_fake_split(data, "train", n=8, size=16)
    manifest_path = data / "train" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    scale = [0.02, 0.5, 0.05, 0.2, 0.1, 0.02, 0.5, 0.05, 0.2, 0.1]
    manifest["pairs"] = {"conditional": "normal", "scale": scale, "beta": None}
    manifest_path.write_text(json.dumps(manifest))
    reversed_features = list(range(9, -1, -1))  # feature 9 matched to latent 0, ...
    for name, loss, wide_r2 in (("v2pairs-aninfonce", "aninfonce", 0.9),
                                ("v2pairs-aninfonce-isotropic", "aninfonce-isotropic", 0.5)):
        write_run(tmp_path, name, 0.9, 0.9, positives="rendered")
        folder = tmp_path / "runs" / name
        result = json.loads((folder / "result.json").read_text())
        result["matching"] = reversed_features
        for k, s in enumerate(scale):
            result["per_latent"][k]["linear_r2"] = wide_r2 if s > 0.1 else 0.95
        (folder / "result.json").write_text(json.dumps(result))
        config = json.loads((folder / "config.json").read_text())
        config.update(loss=loss, data=str(data), train_split="train", latent_dim=10)
        (folder / "config.json").write_text(json.dumps(config))
        # Lambda per feature: 1/scale² of the latent each feature is matched to, so rank correlation 1
        precision = [1 / scale[9 - f] ** 2 for f in range(10)] if loss == "aninfonce" else [3.0]
        with (folder / "log.jsonl").open("a") as log:
            log.write(json.dumps({"step": 50, "precision": [1.0] * len(precision)}) + "\n")
            log.write(json.dumps({"step": 100, "precision": precision}) + "\n")
    # the same preset on snapped pairs of an unpaired split: the realised spreads are compared
    write_fake_split(tmp_path / "data" / "v2-64", "train", n=400, size=8)
    write_run(tmp_path, "v2-aninfonce", 0.7, 0.7)
    config_path = tmp_path / "runs" / "v2-aninfonce" / "config.json"
    config = json.loads(config_path.read_text())
    config.update(data=str(tmp_path / "data" / "v2-64"), train_split="train", scale=scale, seed=0)
    config_path.write_text(json.dumps(config))
    text = summarize(tmp_path)
    assert "| object_x | 0.02 | 2.5e+03 | 95.00 | 95.00 |" in text
    assert "| object_y | 0.5 | 4 | 90.00 | 50.00 |" in text
    assert "(Spearman): 1.00" in text
    assert "On the 4 latents with the widest positives, AnInfoNCE's linear R² is +40.00 points" in text
    assert "One seed per arm: an indication, not a verdict" in text
    rows = [line for line in text.splitlines() if line.startswith("| rotation_alpha | 0.2 |")]
    assert len(rows) == 2 and rows[1].endswith("| 70.00 | 90.00 |")  # R² snapped, exact
    assert "Rank correlation of the realised spread with the asked scales: snapped" in text


PIXELS_ONLY = """entry_prefix = "Ident2026CpuTrack"
[data.v2]
track = "3dident-v2-64"
[[runs]]
name = "v2-pixels"
data = "v2"
preset = "pixels"
"""


@pytest.mark.slow
def test_entries_are_rescored_and_verified(tmp_path):
    """The pixel read-out on a small split: both protocols become verified entries, once."""
    out = tmp_path / "out"
    data = out / "data" / "v2"
    write_fake_split(data, "test", n=40, size=16)
    (tmp_path / "experiment.toml").write_text(PIXELS_ONLY)
    experiment = load_experiment(tmp_path / "experiment.toml")
    run = out / "runs" / "v2-pixels"
    export_pixel_readout(run / "encoder.pt2", 16)
    (run / "experiment.json").write_text(json.dumps({"group": "v2-pixels", "data": "v2", "preset": "pixels"}))
    evaluate(run / "encoder.pt2", data, name="v2-pixels", progress=False).save(run / "result.json")
    evaluate(run / "encoder.pt2", data, protocol="cl-ica-2021", name="v2-pixels",
             progress=False).save(run / "result-cl-ica-2021.json")
    entries = tmp_path / "entries"
    entries.mkdir()
    written = add_entries(experiment, out, entries)
    assert sorted(str(p.relative_to(entries)) for p in written) == [
        "cl-ica-2021/Ident2026CpuTrack_v2-pixels.json", "ident3d-eval-v1/Ident2026CpuTrack_v2-pixels.json"]
    loaded = {e.key: e for e in load_entries(entries)}
    entry = loaded["ident3d-eval-v1/Ident2026CpuTrack_v2-pixels"]
    assert entry["status"] == "public-split" and entry["model_space"] == "pixels"
    assert entry["checkpoint_sha256"] == json.loads((run / "result.json").read_text())["model"]["sha256"]
    assert loaded["cl-ica-2021/Ident2026CpuTrack_v2-pixels"]["protocol"] == "cl-ica-2021"
    assert add_entries(experiment, out, entries) == []  # a second run adds nothing and overwrites nothing
    # the check re-scores each checkpoint against its entry, and names what no longer matches
    table = rescore_entries(experiment, out, entries)
    assert table.count("| matches |") == 2 and "DIFFER" not in table
    entry_path = entries / "ident3d-eval-v1/Ident2026CpuTrack_v2-pixels.json"
    tampered = json.loads(entry_path.read_text())  # a valid entry that claims more than the file scores
    tampered["metrics"]["linear_r2"] += 0.01
    tampered["result"]["metrics"]["linear_r2"] = tampered["metrics"]["linear_r2"]
    entry_path.write_text(json.dumps(tampered))
    clica_path = entries / "cl-ica-2021/Ident2026CpuTrack_v2-pixels.json"
    other = json.loads(clica_path.read_text())
    other["checkpoint_sha256"] = other["result"]["model"]["sha256"] = "0" * 64  # made from another export
    clica_path.write_text(json.dumps(other))
    lines = {line.split(" | ")[0].strip("| "): line
             for line in rescore_entries(experiment, out, entries).splitlines()}
    assert "| same | field metrics/linear_r2: entry Ident2026CpuTrack_v2-pixels says" in lines[
        "ident3d-eval-v1/Ident2026CpuTrack_v2-pixels"]
    assert lines["ident3d-eval-v1/Ident2026CpuTrack_v2-pixels"].endswith("| DIFFERS |")
    # other bytes with every score equal: a run trained again (its export is not byte for byte)
    assert "| DIFFERENT | every metric matches |" in lines["cl-ica-2021/Ident2026CpuTrack_v2-pixels"]
    assert lines["cl-ica-2021/Ident2026CpuTrack_v2-pixels"].endswith(
        "| same scores from other bytes (trained again) |")
    refreshed = tmp_path / "refreshed"
    refreshed.mkdir()
    rescore_entries(experiment, out, entries, refreshed)  # only entries whose every metric matches
    assert [str(p.relative_to(refreshed)) for p in refreshed.rglob("*.json")] == [
        "cl-ica-2021/Ident2026CpuTrack_v2-pixels.json"]
    renewed = json.loads((refreshed / "cl-ica-2021/Ident2026CpuTrack_v2-pixels.json").read_text())
    assert renewed["checkpoint_sha256"] == atomic.sha256_file(run / "encoder.pt2")
    assert renewed["metrics"] == other["metrics"] and renewed["name"] == other["name"]
    with pytest.raises(ResultError, match="already exists"):  # never over a file already there
        rescore_entries(experiment, out, entries, refreshed)
    entry_path.write_text("[1, 2]")  # JSON, but no entry: a row that names it, not a traceback
    assert "is not of type 'object'" in rescore_entries(experiment, out, entries).split(
        "ident3d-eval-v1/Ident2026CpuTrack_v2-pixels |")[1]


def test_an_entry_says_what_its_rendered_pairs_were(tmp_path):
    from ident3d.baselines.baseline_entries import describe, training_data

    config = {"iterations": 4, "batch_size": 8, "positives": "rendered", "lr": 1e-3, "seed": 0,
              "loss": "vmf", "space": "sphere", "data": str(tmp_path), "train_split": "train"}
    write_fake_split(tmp_path, "train", n=8, size=16)
    manifest = json.loads((tmp_path / "train/manifest.json").read_text())
    for pairs, says, data in (
            ({"style": ["object_hue", "ground_hue"]},
             "content/style pairs rendered exactly: object_hue, ground_hue redrawn, the other latents shared",
             "the train split of 3dident-v2-64-cs@1 (ident3d render --track)"),
            ({"conditional": "laplace", "scale": 0.1, "beta": None},
             "Laplace (scale 0.1), pairs rendered exactly (no snapping)",
             "4 exactly rendered positive pairs at the render settings of 3dident-v2-64-cs@1")):
        (tmp_path / "train/manifest.json").write_text(json.dumps({**manifest, "pairs": pairs}))
        assert describe({"config": config, "log": []})["positives"] == says
        assert training_data(config, "3dident-v2-64-cs@1").startswith(data)
