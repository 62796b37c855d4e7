"""The experiment driver (ident3d.baselines.experiment) on a tiny real experiment: renders its data,
trains two seeds and the pixel read-out, scores each under both protocols, writes the report and
verified entries, skips a run another process holds, resumes without redoing anything, and the
shipped CPU-track file parses to the runs and entry ids the committed entries have."""

import json

import pytest

from ident3d.baselines.baseline_entries import add_entries, reproduce_command, rescore_entries
from ident3d.baselines.config import load_preset
from ident3d.baselines.driver import _owner
from ident3d.baselines.experiment import ExperimentError, load_experiment, main
from ident3d.leaderboard.entries import ENTRIES_DIR, load_entries

TINY = """entry_prefix = "Test2026Tiny"
checkpoint_every = 10

[budgets]
tiny = { steps = 2, batch_size = 8, lr = 1e-3 }

[data.small]
render = { n_train = 24, n_test = 24, seed_train = 0, seed_test = 1, resolution = 32, samples = 1 }

[[runs]]
name = "small-smoke"
data = "small"
preset = "smoke"
budget = "tiny"
seeds = [0, 1]

[[runs]]
name = "small-pixels"
data = "small"
preset = "pixels"
"""


@pytest.mark.blender
@pytest.mark.slow
def test_a_tiny_experiment_runs_scores_reports_and_resumes(tmp_path, capsys):
    (tmp_path / "tiny.toml").write_text(TINY)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".run-small-smoke-s1.lock").write_text(_owner())  # another live process holds this run
    assert main([str(tmp_path / "tiny.toml"), str(out)]) == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["small-pixels", "small-smoke-s0"]
    first = (out / "runs/small-smoke-s0/encoder.pt2").stat().st_mtime_ns
    (out / ".run-small-smoke-s1.lock").unlink()  # it went away without finishing: this process takes it
    assert main([str(tmp_path / "tiny.toml"), str(out), "--runs", "small-smoke"]) == 0
    assert (out / "runs/small-smoke-s0/encoder.pt2").stat().st_mtime_ns == first
    assert (out / "data/.small.ready").exists() and not list(out.glob(".*.lock"))
    folders = sorted(p.name for p in (out / "runs").iterdir())
    assert folders == ["small-pixels", "small-smoke-s0", "small-smoke-s1"]
    for folder in folders:
        assert {"encoder.pt2", "result.json", "result-cl-ica-2021.json", "experiment.json"} <= {
            p.name for p in (out / "runs" / folder).iterdir()}
    assert json.loads((out / "runs/small-smoke-s1/config.json").read_text())["seed"] == 1
    report = (out / "REPRODUCTION.md").read_text()
    assert "| small-smoke | 2 |" in report and "| small-pixels | 1 |" in report
    stamps = {f: (out / "runs" / f / "encoder.pt2").stat().st_mtime_ns for f in folders}
    assert main([str(tmp_path / "tiny.toml"), str(out), "--runs", "small-smoke"]) == 0  # resumes: no-op
    assert stamps == {f: (out / "runs" / f / "encoder.pt2").stat().st_mtime_ns for f in folders}
    experiment = load_experiment(tmp_path / "tiny.toml")
    entries = tmp_path / "entries"
    entries.mkdir()
    written = add_entries(experiment, out, entries)
    assert len(written) == 6
    loaded = {e["id"]: e for e in load_entries(entries)}
    assert {e["seed_group"] for e in loaded.values()} == {"small-smoke", "small-pixels"}
    assert "--runs small-smoke-s1" in loaded["Test2026Tiny_small-smoke-s1"]["footnote"]
    assert rescore_entries(experiment, out, entries).count("| matches |") == 6
    capsys.readouterr()
    assert main([str(tmp_path / "tiny.toml"), str(out), "--runs", "nope"]) == 1
    captured = capsys.readouterr()
    error_lines = captured.err.splitlines()
    assert len(error_lines) == 1 and error_lines[0].startswith("error: ")
    assert "no run named 'nope'" in error_lines[0]


@pytest.mark.slow
def test_the_cpu_track_file_names_every_committed_entry():
    experiment = load_experiment("baselines/cpu_track.toml")
    folders = {run.folder for run in experiment.runs}
    committed = {e["id"].removeprefix("Ident2026CpuTrack_").removesuffix("-verified")
                 for e in load_entries(ENTRIES_DIR) if e["id"].startswith("Ident2026CpuTrack_")}
    assert committed <= folders  # runs not made yet have no entry (docs/cpu-track.md shows them unmeasured)
    assert "v2-normal-box-s0" in committed
    groups = {run.folder: run.group for run in experiment.runs}
    for entry in load_entries(ENTRIES_DIR):
        if entry["id"].startswith("Ident2026CpuTrack_") and entry.get("seed_group"):
            folder = entry["id"].removeprefix("Ident2026CpuTrack_")
            assert groups[folder] == entry["seed_group"]


def test_a_run_folder_name_selects_that_run_alone_and_a_group_name_its_seeds():
    experiment = load_experiment("baselines/cpu_track.toml")
    # seed 0 of normal-unbounded lives in folder v2-normal-unbounded; seeds 1 and 2 join its group
    assert [r.folder for r in experiment.select(["v2-normal-unbounded"])] == ["v2-normal-unbounded"]
    assert [r.folder for r in experiment.select(["v2-normal-box"])] == [
        "v2-normal-box-s0", "v2-normal-box-s1", "v2-normal-box-s2"]
    assert [r.folder for r in experiment.select(["v2-normal-box-s1", "v2-pixels"])] == [
        "v2-normal-box-s1", "v2-pixels"]
    # in the order named, not the file's (which lists normal-box before v2-pixels), each run once
    assert [r.folder for r in experiment.select(["v2-pixels", "v2-normal-box", "v2-normal-box-s1"])] == [
        "v2-pixels", "v2-normal-box-s0", "v2-normal-box-s1", "v2-normal-box-s2"]
    with pytest.raises(ExperimentError, match="no run named 'v2-normal-box-curve'"):
        experiment.select(["v2-normal-box-curve"])
    assert experiment.select(["v2-normal-box-curve"], missing_ok=True) == []
    # every entry's reproduce command trains exactly the run that made it
    for run in experiment.runs:
        assert experiment.select([reproduce_command(experiment, run).split("--runs ")[1]]) == [run]


def test_a_broken_experiment_file_is_refused_with_the_key_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace('budget = "tiny"', 'budget = "huge"'))
    with pytest.raises(ExperimentError, match=r"runs\[0\] \(small-smoke\): budget 'huge' is not one of tiny"):
        load_experiment(bad)
    bad.write_text(TINY.replace("[data.small]\nrender", "[data.small]\ntrack = 'x'\nrender"))
    with pytest.raises(ExperimentError, match="data.small needs exactly one of track, pairs, render"):
        load_experiment(bad)
    bad.write_text(TINY.replace('name = "small-smoke"', 'name = "../../escape"'))
    with pytest.raises(ExperimentError, match=r"name '../../escape' is not a folder name"):
        load_experiment(bad)


def test_pairs_take_a_presets_scales_by_its_name():
    experiment = load_experiment("baselines/cpu_track.toml")
    assert experiment.data["v2pairs"]["pairs"]["scale"] == list(load_preset("aninfonce").scale)
    moderate = experiment.data["v2pairs-moderate"]["pairs"]["scale"]
    assert moderate == list(load_preset("aninfonce-sphere").scale)


def test_exact_pairs_render_with_their_conditional_and_scales(tmp_path, monkeypatch):
    import ident3d.packing
    import ident3d.render.job
    from ident3d.baselines.experiment import prepare_data, render_jobs

    experiment = load_experiment("baselines/cpu_track.toml")
    (laplace,) = render_jobs(experiment, tmp_path, "v2pairs-laplace")
    (moderate,) = render_jobs(experiment, tmp_path, "v2pairs-moderate")
    assert (laplace.seed, len(laplace.raw), laplace.layout.split) == (4, 50_000, "train")
    assert laplace.pairs["conditional"] == "laplace" and laplace.pairs["scale"] == [0.1] * 10
    assert moderate.pairs["conditional"] == "normal" and moderate.pairs["scale"][:2] == [0.0877, 0.1115]
    content_style = load_experiment("baselines/content_style.toml")  # the content/style track, test first
    jobs = render_jobs(content_style, tmp_path / "cs", "cs")
    assert [(job.layout.root, job.layout.split) for job in jobs] == [(tmp_path / "cs/data/cs", "test"),
                                                                     (tmp_path / "cs/data/cs", "train")]
    # a pairs data set that only lends its borrowed test split to the pixel read-out renders nothing
    (tmp_path / "lend.toml").write_text("""[data.pairs]
pairs = { n = 8, seed = 0, style = ["object_hue"], variant = "v2", preset = "preview", resolution = 32 }
test = "plain"
[data.plain]
render = { n_train = 8, n_test = 8, seed_train = 0, seed_test = 1, resolution = 32 }
""")
    calls = []
    monkeypatch.setattr(ident3d.render.job, "render_split",
                        lambda job, **kw: calls.append(("render", job.layout.split)))
    monkeypatch.setattr(ident3d.packing, "pack_split",
                        lambda root, split, **kw: calls.append(("pack", split)))
    lend = load_experiment(tmp_path / "lend.toml")
    prepare_data(lend, tmp_path / "lend", "plain", workers=1, train=False)
    prepare_data(lend, tmp_path / "lend", "pairs", workers=1, train=False)
    assert calls == [("render", "test"), ("pack", "test")]  # plain's test only
    assert (tmp_path / "lend/data/pairs/test").resolve() == (tmp_path / "lend/data/plain/test").resolve()


@pytest.mark.parametrize(("scale", "message"), [
    ("no-such-preset", "is neither a list of scales nor a preset"),
    ("normal-box", "that preset has one scale, not one per latent")])
def test_a_pairs_scale_naming_no_usable_preset_is_refused(tmp_path, scale, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(f'[data.p]\npairs = {{ n = 8, seed = 0, scale = "{scale}", variant = "v2", '
                   'preset = "preview", resolution = 32 }\n')
    with pytest.raises(ExperimentError, match=rf"data.p.pairs.scale = '{scale}': .*{message}|"
                                              rf"data.p.pairs.scale = '{scale}' {message}"):
        load_experiment(bad)


def test_the_ood_track_file_runs_its_baselines_on_every_split_of_its_track():
    from ident3d.tracks import get_track

    experiment = load_experiment("baselines/ood_track.toml")
    assert [run.folder for run in experiment.runs] == ["ood-pixels", "ood-supervised", "ood-normal-box"]
    track = get_track(experiment.data["ood"]["track"])
    assert {name for name, spec in track.splits.items() if spec.region} == {
        "test-interpolation", "test-extrapolation", "test-composition"}


@pytest.mark.slow
def test_a_run_that_continues_a_finished_run_equals_one_trained_from_step_0(tmp_path):
    from conftest import write_fake_split
    from safetensors import safe_open

    from ident3d.baselines.experiment import run_one
    from ident3d.baselines.train import read_log

    (tmp_path / "go.toml").write_text("""entry_prefix = "Test2026Go"
[budgets]
short = { steps = 2, batch_size = 8, lr = 1e-3 }
long = { steps = 4, batch_size = 8, lr = 1e-3 }
[data.small]
render = { n_train = 40, n_test = 40, seed_train = 0, seed_test = 1, resolution = 32 }
[[runs]]
name = "short"
data = "small"
preset = "smoke"
budget = "short"
set = { log_every = 1 }
[[runs]]
name = "long"
data = "small"
preset = "smoke"
budget = "long"
set = { log_every = 1, eval_every = 1 }
continues = "short"
[[runs]]
name = "fresh"
data = "small"
preset = "smoke"
budget = "long"
set = { log_every = 1 }
""")
    for out in ("out", "early"):
        for split, seed in (("train", 0), ("test", 1)):
            write_fake_split(tmp_path / out / "data/small", split, n=40, size=32, seed=seed)
    experiment = load_experiment(tmp_path / "go.toml")
    runs = {run.folder: run for run in experiment.runs}
    assert runs["long"].continues == "short" and runs["short"].continues is None
    run_one(experiment, runs["long"], tmp_path / "early", "cpu")  # nothing to continue yet: from step 0
    assert json.loads((tmp_path / "early/runs/long/config.json").read_text())["iterations"] == 4
    for name in ("short", "long", "fresh"):
        run_one(experiment, runs[name], tmp_path / "out", "cpu")
    folders = {name: tmp_path / "out/runs" / name for name in runs}
    long_log, short_log = (read_log(folders[n] / "log.jsonl") for n in ("long", "short"))
    assert [r["step"] for r in long_log] == [1, 2, 3, 4] and long_log[:2] == short_log  # started at step 2
    assert "eval" in long_log[2] and "eval" not in long_log[0]  # its own settings from step 2 on
    for other in ("fresh", "early"):
        folder = folders[other] if other == "fresh" else tmp_path / "early/runs/long"
        with safe_open(str(folders["long"] / "encoder.safetensors"), "pt") as f, \
                safe_open(str(folder / "encoder.safetensors"), "pt") as g:
            assert all(torch_equal(f.get_tensor(k), g.get_tensor(k)) for k in f.keys())
    bad = tmp_path / "bad.toml"
    bad.write_text((tmp_path / "go.toml").read_text().replace('continues = "short"', 'continues = "../x"'))
    with pytest.raises(ExperimentError, match=r"continues '\.\./x' is not a run folder name"):
        load_experiment(bad)


def torch_equal(a, b):
    import torch

    return torch.equal(a, b)


@pytest.mark.slow
def test_a_run_that_starts_from_another_takes_its_trunk_and_head_and_waits_for_it(tmp_path):
    from conftest import write_fake_split
    from safetensors import safe_open

    from ident3d.baselines.experiment import run_one
    from ident3d.baselines.train import read_log

    (tmp_path / "go.toml").write_text("""entry_prefix = "Test2026Go"
[budgets]
short = { steps = 2, batch_size = 8, lr = 1e-3 }
still = { steps = 2, batch_size = 8, lr = 1e-9 }
[data.small]
render = { n_train = 40, n_test = 40, seed_train = 0, seed_test = 1, resolution = 32 }
[[runs]]
name = "trunk"
data = "small"
preset = "supervised"
budget = "short"
set = { log_every = 1 }
[[runs]]
name = "tuned"
data = "small"
preset = "smoke"
budget = "still"
starts_from = "trunk"
set = { log_every = 1, eval_every = 1, eval_images = 40, eval_kernel = true }
""")
    for split, seed in (("train", 0), ("test", 1)):
        write_fake_split(tmp_path / "out/data/small", split, n=40, size=32, seed=seed)
    experiment = load_experiment(tmp_path / "go.toml")
    runs = {run.folder: run for run in experiment.runs}
    with pytest.raises(ExperimentError, match="starts_from trunk, which has not finished.*Fix: run trunk"):
        run_one(experiment, runs["tuned"], tmp_path / "out", "cpu")
    assert not (tmp_path / "out/runs/tuned").exists()
    for name in ("trunk", "tuned"):
        run_one(experiment, runs[name], tmp_path / "out", "cpu")
    folders = {name: tmp_path / "out/runs" / name for name in runs}
    config = json.loads((folders["tuned"] / "config.json").read_text())
    assert config["init_from"] == str((folders["trunk"] / "checkpoint.safetensors").resolve())

    def weights(folder):
        with safe_open(str(folder / "checkpoint.safetensors"), framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys() if k.startswith("model.")}

    trunk, tuned = weights(folders["trunk"]), weights(folders["tuned"])
    # a learning rate of 1e-9 for two steps: the trunk's weights, moved by at most rounding
    for key in (k for k in trunk if k.startswith(("model.backbone.", "model.head.")) and "running" not in k
                and "num_batches" not in k):
        assert (tuned[key] - trunk[key]).abs().max() < 1e-6, key
    assert set(tuned) - set(trunk)  # the box space's own parameter, which the trunk has none of
    evals = [r["eval"] for r in read_log(folders["tuned"] / "log.jsonl")]
    assert all(len(e["kernel_r2_per_latent"]) == len(e["linear_r2_per_latent"]) == 10 for e in evals)


def test_a_trunk_of_another_shape_is_one_clear_error(tmp_path):
    from conftest import write_fake_split

    from ident3d.baselines.train import build_model, start_from_trunk, train
    from ident3d.errors import TrainingError

    write_fake_split(tmp_path / "data", "train", n=40, size=32)
    train(load_preset("smoke", data=str(tmp_path / "data"), iterations=1, batch_size=8, log_every=1,
                      checkpoint_every=1, eval_every=0, latent_dim=4), tmp_path / "small")
    model = build_model(load_preset("smoke"), [0.5] * 3, [0.25] * 3)
    with pytest.raises(TrainingError, match="init_from .*do not fit this model.*Fix: start from a run of"):
        start_from_trunk(model, tmp_path / "small/checkpoint.safetensors")
