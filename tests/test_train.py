"""The training loop: exact resume, exports that match the in-memory model, and real learning."""

import json
import warnings

import numpy as np
import pytest
import torch
from conftest import write_fake_split
from safetensors import safe_open

from ident3d.baselines.config import load_preset, preset_names
from ident3d.baselines.train import build_model, cpu_cost_note, export, read_log, train
from ident3d.datasets import ThreeDIdent
from ident3d.errors import TrainingError
from ident3d.evaluation import evaluate
from ident3d.results import validate_result
from ident3d.submissions import load_submission


@pytest.fixture(scope="module")
def fake_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("fake")
    write_fake_split(root, "train", n=120, size=32)
    write_fake_split(root, "test", n=60, size=32, seed=1)
    return root


def tiny(data, iterations, **kw):
    return load_preset("smoke", data=str(data), iterations=iterations, **{
        "batch_size": 8, "log_every": 1, "checkpoint_every": 2, "eval_every": 2, "eval_images": 40, **kw})


@pytest.mark.slow
def test_a_moved_run_and_its_data_resume_where_they_are_now(fake_data, tmp_path):
    import shutil
    from dataclasses import replace

    train(tiny(fake_data, 2), tmp_path / "demo/run", progress=False)
    shutil.copytree(fake_data, tmp_path / "demo/data")  # the data sat beside the run, then both moved
    shutil.move(tmp_path / "demo", tmp_path / "moved")
    moved = replace(tiny(fake_data, 4), data=str(tmp_path / "moved/data"))
    train(moved, tmp_path / "moved/run", resume=True, progress=False)
    assert [r["step"] for r in read_log(tmp_path / "moved/run/log.jsonl")] == [1, 2, 3, 4]
    other = tmp_path / "other"
    write_fake_split(other, "train", n=120, size=32, seed=7)  # other latents: not this run's data
    write_fake_split(other, "test", n=60, size=32, seed=1)
    with pytest.raises(TrainingError, match="data: saved"):
        train(replace(moved, data=str(other), iterations=6), tmp_path / "moved/run", resume=True,
              progress=False)


@pytest.mark.slow
def test_resume_reproduces_the_loss_curve_of_an_unbroken_run(fake_data, tmp_path):
    train(tiny(fake_data, 6), tmp_path / "unbroken", progress=False)
    train(tiny(fake_data, 4), tmp_path / "resumed", progress=False)
    first_part = read_log(tmp_path / "resumed/log.jsonl")
    assert [r["step"] for r in first_part] == [1, 2, 3, 4]
    train(tiny(fake_data, 6), tmp_path / "resumed", resume=True, progress=False)

    unbroken, resumed = read_log(tmp_path / "unbroken/log.jsonl"), read_log(tmp_path / "resumed/log.jsonl")
    assert [r["step"] for r in resumed] == list(range(1, 7))
    np.testing.assert_allclose([r["loss"] for r in resumed], [r["loss"] for r in unbroken], rtol=1e-6)
    assert len({round(r["loss"], 6) for r in unbroken}) > 1, "the loss never changed"
    for a, b in zip(unbroken, resumed, strict=True):
        if "eval" in a:
            for key, value in a["eval"].items():
                assert np.asarray(b["eval"][key]) == pytest.approx(np.asarray(value), rel=1e-5, abs=1e-4)
    with safe_open(str(tmp_path / "unbroken/checkpoint.safetensors"), "pt") as f, \
            safe_open(str(tmp_path / "resumed/checkpoint.safetensors"), "pt") as g:
        assert f.metadata()["step"] == g.metadata()["step"] == "6"
        for key in f.keys():
            torch.testing.assert_close(f.get_tensor(key), g.get_tensor(key), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_a_run_trained_again_has_the_same_weights_and_scores(fake_data, tmp_path):
    # what lets an entry whose model file was not kept be re-scored by training it again: on one
    # machine (same torch, same thread count, same data) training is deterministic to the bit; the
    # periodic evaluation (a learning curve's) does not touch it, so a curve run is the plain run too
    train(tiny(fake_data, 4), tmp_path / "first", progress=False)
    train(tiny(fake_data, 4, eval_every=0), tmp_path / "again", progress=False)
    assert "eval" in read_log(tmp_path / "first/log.jsonl")[1]
    assert not any("eval" in r for r in read_log(tmp_path / "again/log.jsonl"))
    with safe_open(str(tmp_path / "first/encoder.safetensors"), "pt") as f, \
            safe_open(str(tmp_path / "again/encoder.safetensors"), "pt") as g:
        assert f.metadata() == g.metadata() and sorted(f.keys()) == sorted(g.keys())
        assert all(torch.equal(f.get_tensor(key), g.get_tensor(key)) for key in f.keys())
    first, again = (json.loads((tmp_path / name / "result.json").read_text()) for name in ("first", "again"))
    assert first["metrics"] == again["metrics"] and first["per_latent"] == again["per_latent"]


@pytest.mark.slow
def test_a_run_folder_is_never_overwritten_or_resumed_with_other_settings(fake_data, tmp_path):
    from ident3d.errors import TrainingError

    train(tiny(fake_data, 2), tmp_path / "run", progress=False)
    before = (tmp_path / "run/checkpoint.safetensors").read_bytes()
    with pytest.raises(TrainingError, match="holds .* file.*--resume"):
        train(tiny(fake_data, 2), tmp_path / "run", progress=False)
    with pytest.raises(TrainingError, match="lr: saved 0.001, now 0.01"):
        train(tiny(fake_data, 4, lr=0.01), tmp_path / "run", resume=True, progress=False)
    assert (tmp_path / "run/checkpoint.safetensors").read_bytes() == before
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine/result.json").write_text("a user's file")
    with pytest.raises(TrainingError, match="result.json"):
        train(tiny(fake_data, 2), tmp_path / "mine", progress=False)
    assert (tmp_path / "mine/result.json").read_text() == "a user's file"
    # --overwrite: the old folder stays whole until the new run is complete, then is replaced
    made = train(tiny(fake_data, 2, lr=0.01), tmp_path / "run", progress=False, overwrite=True)
    assert made.parent == tmp_path / "run" and made.exists()
    assert json.loads((tmp_path / "run/config.json").read_text())["lr"] == 0.01
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "run"]
    assert json.loads(made.read_text())["model"]["name"] == "smoke (run)"  # not the staging ".run.new"


@pytest.mark.slow
def test_a_run_killed_before_its_first_checkpoint_restarts_with_a_clean_log(fake_data, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "log.jsonl").write_text(json.dumps({"step": 1, "loss": 99.0}) + "\n")
    train(tiny(fake_data, 2), out, resume=True, progress=False)
    records = read_log(out / "log.jsonl")
    assert [r["step"] for r in records] == [1, 2] and records[0]["loss"] != 99.0


def test_resume_before_the_first_checkpoint_says_so_and_refuses_other_settings(fake_data, tmp_path, caplog):
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text(json.dumps(tiny(fake_data, 2).to_json()))  # started, never saved
    with pytest.raises(TrainingError, match="lr: saved 0.001, now 0.01"):
        train(tiny(fake_data, 2, lr=0.01), out, resume=True, progress=False)
    with caplog.at_level("WARNING", logger="ident3d"):
        train(tiny(fake_data, 2), out, resume=True, progress=False)
    assert "stopped before its first checkpoint, so it starts again from step 0" in caplog.text


@pytest.mark.slow
def test_exports_match_the_in_memory_model_and_the_evaluator_scores_them(fake_data, tmp_path):
    config = tiny(fake_data, 1)
    model = build_model(config, [0.5, 0.4, 0.3], [0.2, 0.2, 0.25]).eval()
    x = torch.rand(5, 3, 32, 32)
    with torch.no_grad():
        expected = model(x)
    pt2, weights = export(model, tmp_path, resolution=32)
    for path in (pt2, weights):  # both run in the sandbox
        submission = load_submission(path)
        try:
            torch.testing.assert_close(torch.from_numpy(submission.model(x)), expected, rtol=1e-5,
                                       atol=1e-5, msg=str(path))
        finally:
            submission.close()
    result = evaluate(pt2, fake_data, progress=False)
    validate_result(result.document)
    assert result.document["model"]["feature_dim"] == 10
    from_weights = evaluate(weights, fake_data, progress=False).document
    assert from_weights["model"]["arch"] == "resnet18-contrastive"  # read from the file's metadata
    assert from_weights["metrics"] == pytest.approx(result.metrics, abs=1e-5)


@pytest.mark.slow
def test_a_finished_run_holds_exports_logs_and_a_valid_result(fake_data, tmp_path):
    out = tmp_path / "run"
    result_path = train(tiny(fake_data, 2), out, progress=False)
    assert result_path == out / "result.json"
    document = json.loads(result_path.read_text())
    validate_result(document)
    assert document["model"]["file"] == "encoder.pt2"
    assert json.loads((out / "config.json").read_text())["iterations"] == 2
    assert {"loss", "images_per_s", "data_wait"} <= set(read_log(out / "log.jsonl")[0])
    mtime = result_path.stat().st_mtime_ns
    assert train(tiny(fake_data, 2), out, resume=True, progress=False) == result_path
    assert result_path.stat().st_mtime_ns == mtime, "a finished run was redone"
    short = tmp_path / "short"  # fewer steps than one log window: the last window is logged anyway
    train(tiny(fake_data, 3, log_every=10, checkpoint_every=10), short, progress=False)
    assert [r["step"] for r in read_log(short / "log.jsonl")] == [3]


@pytest.mark.blender
@pytest.mark.slow
def test_smoke_training_on_real_renders_beats_the_untrained_encoder(tmp_path):
    from ident3d.render.job import plan_job, render_split
    from ident3d.render.settings import resolve_settings

    data = tmp_path / "data"
    settings = resolve_settings("preview", resolution=32, samples=2)
    for split, n, seed in (("train", 1000, 0), ("test", 300, 1)):
        render_split(plan_job(data, split, n=n, seed=seed, variant="v2", settings=settings),
                     workers=2, progress=False)
    # linear R² on this data: 0.17 untrained, 0.38 after 60 steps (0.40 after 100, 40 s more here)
    config = load_preset("smoke", data=str(data), iterations=60, eval_every=0)
    untrained = build_model(config, *ThreeDIdent(data, "train").channel_stats())
    export(untrained, tmp_path / "untrained", resolution=32)
    before = evaluate(tmp_path / "untrained/encoder.pt2", data, progress=False).metrics["linear_r2"]
    after = json.loads(train(config, tmp_path / "run", progress=False).read_text())["metrics"]["linear_r2"]
    assert after > before + 0.15, f"linear R^2 untrained {before:.3f}, trained {after:.3f}"


@pytest.mark.gpu
def test_cuda_training_with_bf16_autocast_and_channels_last(fake_data, tmp_path):
    config = tiny(fake_data, 4, device="cuda")
    result = json.loads(train(config, tmp_path / "run", progress=False).read_text())
    assert result["device"].startswith("cuda")
    losses = [r["loss"] for r in read_log(tmp_path / "run/log.jsonl")]
    assert len(losses) == 4 and all(np.isfinite(losses))


@pytest.mark.slow
@pytest.mark.parametrize("preset", preset_names())
def test_every_preset_trains(preset, tmp_path):
    write_fake_split(tmp_path / "data", "train", n=40, size=32)  # no test split: no final scoring
    config = load_preset(preset, data=str(tmp_path / "data"), iterations=2, batch_size=8, log_every=1,
                         checkpoint_every=1, device="cpu")
    assert train(config, tmp_path / "run", progress=False) == tmp_path / "run/checkpoint.safetensors"
    losses = [r["loss"] for r in read_log(tmp_path / "run/log.jsonl")]
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert (tmp_path / "run/encoder.pt2").exists()


@pytest.mark.slow
def test_train_takes_a_config_file_and_set_overrides_over_the_preset(fake_data, tmp_path, capsys):
    from ident3d.cli import main

    (tmp_path / "mine.toml").write_text("tau = 0.5\nscale = [0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, "
                                        "0.2]\niterations = 2\nbatch_size = 8\nlog_every = 1\n"
                                        "checkpoint_every = 1\neval_every = 0\n")
    mine = str(tmp_path / "mine.toml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["train", "--data", str(fake_data), "--preset", "smoke", "--config", mine,
                     "--set", "tau=0.25", "--set", "include_self=true", "--set", "loss=aninfonce-isotropic",
                     "--out", str(tmp_path / "run"), "-q"])
    assert code == 0
    assert not [w for w in caught if "torch/export" in w.filename], "export warns the user"
    saved = json.loads((tmp_path / "run/config.json").read_text())
    assert saved["tau"] == 0.25 and saved["include_self"] is True and saved["scale"][1] == 0.2
    assert saved["preset"] == "smoke" and saved["iterations"] == 2
    assert len(read_log(tmp_path / "run/log.jsonl")[0]["precision"]) == 1  # the learned Lambda is logged
    printed = capsys.readouterr().out  # the score, as evaluate prints it, and where it can go
    assert "linear_r2" in printed and "mean" in printed
    assert f"wrote {tmp_path / 'run' / 'result.json'}" in printed
    assert "not a track's split" in printed
    assert main(["train", "--data", str(fake_data), "--out", str(tmp_path / "r2"), "--set", "tau"]) == 1
    assert "expected key=value" in capsys.readouterr().err


def test_smoke_on_224_px_on_a_cpu_says_what_it_costs_and_what_to_use_instead():
    smoke = load_preset("smoke", data="data")
    note = cpu_cost_note(smoke, 224, torch.device("cpu"))
    hours = float(note.split("about ")[1].split(" hours")[0])
    assert hours >= 0.5 and "preview" in note and "--device cuda" in note and "\n" not in note
    assert cpu_cost_note(smoke, 64, torch.device("cpu")) is None  # what smoke is meant for
    assert cpu_cost_note(smoke, 224, torch.device("cuda")) is None
    assert cpu_cost_note(load_preset("smoke", data="data", iterations=10), 224, torch.device("cpu")) is None
