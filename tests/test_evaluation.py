import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import write_fake_split

from ident3d.datasets import ThreeDIdent
from ident3d.errors import ResultError, SubmissionError
from ident3d.evaluation import evaluate
from ident3d.results import validate_result


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_fake_split(root, "test", n=300, size=16)
    return root


class ColourEncoder(torch.nn.Module):
    """Reads the latents the fixture wrote into the mean colour: a partially good encoder."""

    def forward(self, x):
        return torch.cat([x.mean(dim=(2, 3)), x[:, :, :4, :4].std(dim=(2, 3))], dim=1)


def export(tmp_path, module, name="enc.pt2", size=16):
    program = torch.export.export(module.eval(), (torch.rand(2, 3, size, size),),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    path = tmp_path / name
    torch.export.save(program, str(path))
    return path


@pytest.mark.slow
def test_true_latents_random_features_and_a_pt2_model(data, tmp_path):
    z = np.load(data / "test/raw_latents.npy")
    np.save(tmp_path / "true.npy", z)
    best = evaluate(tmp_path / "true.npy", data, progress=False)
    assert best.metrics["linear_r2"] > 0.999 and best.metrics["mcc_pearson"] > 0.999
    assert best.document["model"]["self_reported"] is True
    assert [r["factor"] for r in best.document["per_latent"]][7] == "object_hue"

    np.save(tmp_path / "noise.npy", np.random.default_rng(0).normal(size=(300, 10)))
    worst = evaluate(tmp_path / "noise.npy", data, progress=False)
    assert worst.metrics["linear_r2"] < 0.1 and worst.metrics["mcc_pearson"] < 0.2

    model = evaluate(export(tmp_path, ColourEncoder()), data, progress=False, name="colour")
    per = {r["factor"]: r["linear_r2"] for r in model.document["per_latent"]}
    assert min(per["object_x"], per["object_y"], per["object_z"]) > 0.95
    assert max(per[f] for f in list(per)[3:]) < 0.2
    assert model.document["model"]["kind"] == "exported-program"
    assert model.document["dataset"]["resolution"] == [16, 16]
    validate_result(model.document)


class ScaledColourEncoder(ColourEncoder):
    """The same features through a layer with weights, so the module has state to hash and to move."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Linear(6, 6)

    def forward(self, x):
        return self.scale(super().forward(x))


@pytest.mark.slow
def test_an_in_memory_module_is_scored_like_its_export_and_left_as_it_was(data, tmp_path):
    torch.manual_seed(0)
    module = ScaledColourEncoder().train()
    weight = module.scale.weight.detach().clone()
    in_process = evaluate(module, data, progress=False)
    assert module.training and torch.equal(module.scale.weight, weight)  # mode and weights as given
    assert module.scale.weight.is_contiguous()
    exported = evaluate(export(tmp_path, module, name="same.pt2"), data, progress=False)
    document = in_process.document
    assert document["model"]["kind"] == "module" and document["model"]["self_reported"] is True
    assert document["model"]["name"] == "ScaledColourEncoder (in-process)"
    assert exported.document["model"]["self_reported"] is False
    head = in_process.table().splitlines()[0]  # what was scored, under which protocol, and by whom
    from ident3d.protocols import REGISTRY

    assert f"under ident3d-eval-v1 {REGISTRY['ident3d-eval-v1'].version}" in head and "self-reported" in head
    assert "scored from the model file in the sandbox" in exported.table().splitlines()[0]
    for key, value in exported.metrics.items():
        assert in_process.metrics[key] == pytest.approx(value, abs=1e-6)
    validate_result(document)
    other = ScaledColourEncoder()
    assert evaluate(other, data, progress=False).document["model"]["sha256"] != document["model"]["sha256"]
    from ident3d.submissions import module_submission

    half = ScaledColourEncoder().to(torch.bfloat16)  # any dtype is identified by its bytes
    assert module_submission(half).sha256 != module_submission(half.float()).sha256


def test_evaluation_says_what_it_fits_before_the_slow_part(data, tmp_path, capfd):
    np.save(tmp_path / "true.npy", np.load(data / "test/raw_latents.npy"))
    evaluate(tmp_path / "true.npy", data, progress=True)
    assert "kernel ridge" in capfd.readouterr().err  # a bar on stderr, which a script sees too
    evaluate(tmp_path / "true.npy", data, progress=False)
    assert capfd.readouterr().err == ""


@pytest.mark.slow
def test_same_submission_twice_gives_identical_metrics(data, tmp_path):
    path = export(tmp_path, ColourEncoder())
    a = evaluate(path, data, progress=False)
    b = evaluate(path, data, progress=False)
    assert a.document["metrics"] == b.document["metrics"]
    assert a.document["per_latent"] == b.document["per_latent"]


def test_cl_ica_protocol(data, tmp_path):
    z = np.load(data / "test/raw_latents.npy")
    np.save(tmp_path / "true.npy", z[:, ::-1])
    r = evaluate(tmp_path / "true.npy", data, protocol="cl-ica-2021", progress=False)
    assert r.metrics["mcc_pearson"] == pytest.approx(1) and r.metrics["nonlinear_r2"] is None
    assert r.document["n_fit"] == 150 and r.document["n_score"] == 150


class MakesMarker:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".pt", ".pth", ".pkl"])
def test_pickles_are_never_loaded(data, tmp_path, suffix):
    marker = tmp_path / "pwned"
    bad = tmp_path / f"model{suffix}"
    bad.write_bytes(pickle.dumps(MakesMarker(str(marker))))
    with pytest.raises(SubmissionError, match="torch.export"):
        evaluate(bad, data, progress=False)
    assert not marker.exists()
    out = tmp_path / "r.json"
    cli = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "evaluate", "--data", str(data),
                          "--model", str(bad), "--out", str(out)], capture_output=True, text=True)
    assert cli.returncode == 1 and "torch.export" in cli.stderr
    assert not marker.exists() and not out.exists()


class NaNEncoder(torch.nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3)) * torch.nan


@pytest.mark.slow
def test_bad_outputs_give_submission_error_and_no_file(data, tmp_path):
    with pytest.raises(SubmissionError, match="non-finite"):
        evaluate(export(tmp_path, NaNEncoder()), data, progress=False)
    np.save(tmp_path / "short.npy", np.zeros((299, 10)))
    with pytest.raises(SubmissionError, match="expected 300 rows"):
        evaluate(tmp_path / "short.npy", data, progress=False)
    np.save(tmp_path / "flat.npy", np.zeros(300))
    with pytest.raises(SubmissionError, match="shape"):
        evaluate(tmp_path / "flat.npy", data, progress=False)
    out = tmp_path / "result.json"
    cli = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "evaluate", "--data", str(data),
                          "--model", str(tmp_path / "short.npy"), "--out", str(out)],
                         capture_output=True, text=True)
    assert cli.returncode == 1 and "300 rows" in cli.stderr and not out.exists()


def test_an_in_memory_model_for_another_image_size_gets_one_line_naming_the_shape(data):
    wrong = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 64 * 64, 10))  # made for 64 px
    with pytest.raises(SubmissionError) as raised:
        evaluate(wrong, data, progress=False)
    message = str(raised.value)
    assert "\n" not in message and "(B, 3, H, W" in message and "16 x 16 px" in message
    assert "mat1 and mat2" in message and "Fix:" in message  # torch's reason, then what to change
    assert wrong.training  # left as it was given


@pytest.mark.slow
def test_cli_writes_a_valid_result(data, tmp_path):
    np.save(tmp_path / "true.npy", np.load(data / "test/raw_latents.npy"))
    out = tmp_path / "result.json"
    cli = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "evaluate", "--data", str(data),
                          "--model", str(tmp_path / "true.npy"), "--name", "oracle", "--out",
                          str(out)], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert "object_hue" in cli.stdout
    document = json.loads(out.read_text())
    assert document["dataset"]["track"].startswith("custom:")  # a fixture, not a track's split
    assert f"data: {document['dataset']['track']}, not a track's split" in cli.stdout
    validate_result(document)
    assert document["model"]["name"] == "oracle"
    document["metrics"]["linear_r2"] = 1.5
    with pytest.raises(ResultError, match="metrics/linear_r2"):
        validate_result(document)
    before = sorted(tmp_path.iterdir())
    printed = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "evaluate", "--data", str(data),
                              "--model", str(tmp_path / "true.npy")], capture_output=True, text=True)
    assert printed.returncode == 0 and "object_hue" in printed.stdout and "not written" in printed.stdout
    assert sorted(tmp_path.iterdir()) == before  # without --out nothing is written


@pytest.mark.slow
def test_a_crafted_pt2_runs_code_in_torch_export_load_but_never_in_ident3d(data, tmp_path):
    from hostile import quiet_sample_inputs, rewrite_zip

    marker = tmp_path / "pwned"
    evil = rewrite_zip(export(tmp_path, ColourEncoder()), tmp_path / "quiet.pt2",
                       {"data/sample_inputs/model.pt": quiet_sample_inputs(marker, 16)})
    # torch's own loader runs the payload and loads the model as if nothing happened
    script = ("import sys, torch; p = torch.export.load(sys.argv[1]); "
              "print(p.module()(torch.rand(2, 3, 16, 16)).shape)")
    torch_load = subprocess.run([sys.executable, "-c", script, str(evil)], capture_output=True, text=True)
    assert torch_load.returncode == 0 and marker.exists(), torch_load.stderr[-500:]
    marker.unlink()
    with pytest.raises(SubmissionError, match="sample_inputs"):
        evaluate(evil, data, progress=False)
    assert not marker.exists()


@pytest.mark.slow
def test_a_dynamic_export_runs_in_the_sandbox_like_the_module_and_scores(data, tmp_path):
    from ident3d.sandbox.host import SandboxedModel
    from ident3d.sandbox.loading import LoadRefused, no_unpickling

    auto = torch.export.Dim.AUTO
    program = torch.export.export(ColourEncoder().eval(), (torch.rand(2, 3, 16, 16),),
                                  dynamic_shapes=({0: auto, 2: auto, 3: auto},))
    torch.export.save(program, str(tmp_path / "encoder.pt2"))
    with no_unpickling(), pytest.raises(LoadRefused, match="unpickle"):
        pickle.loads(pickle.dumps(1))
    x = torch.rand(5, 3, 16, 16)
    with SandboxedModel(tmp_path / "encoder.pt2", "exported-program") as loaded:
        np.testing.assert_allclose(loaded(x), ColourEncoder()(x).numpy(), rtol=1e-6)  # channels-last
    assert evaluate(tmp_path / "encoder.pt2", data, progress=False).metrics["linear_r2"] > 0.2


def python_block(text: str, after: str) -> str:
    """The first ```python block of ``text`` after the line containing ``after``."""
    start = text.index("```python\n", text.index(after)) + len("```python\n")
    return text[start:text.index("```", start)]


@pytest.fixture(scope="module")
def sized_splits(tmp_path_factory):
    roots = {}
    for size in (64, 224):
        roots[size] = tmp_path_factory.mktemp(f"px{size}")
        write_fake_split(roots[size], "test", n=8, size=size)
    return roots


@pytest.mark.parametrize("source, after", [("README.md", "### 4. Evaluate your encoder"),
                                           ("docs/submissions.md", "## `.pt2`")])
def test_every_documented_export_recipe_scores_at_64_and_224_px(sized_splits, tmp_path, monkeypatch,
                                                                source, after):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / source).read_text()
    monkeypatch.chdir(tmp_path)
    namespace = {"model": ColourEncoder(), "torch": torch}  # the docs' snippet exports "your" model
    exec(compile(python_block(text, after), source, "exec"), namespace)  # noqa: S102 (our own docs)
    for size, root in sized_splits.items():
        result = evaluate(tmp_path / "encoder.pt2", root, progress=False)
        assert result.document["dataset"]["resolution"] == [size, size]


@pytest.mark.slow
def test_a_fixed_size_export_is_told_which_dimension_to_make_dynamic(data, tmp_path):
    fixed = {"height": torch.export.export(ColourEncoder().eval(), (torch.rand(2, 3, 32, 32),),
                                           dynamic_shapes=({0: torch.export.Dim.AUTO},)),
             "batch size": torch.export.export(ColourEncoder().eval(), (torch.rand(1, 3, 16, 16),))}
    for name, program in fixed.items():
        path = tmp_path / f"{name.replace(' ', '-')}.pt2"
        torch.export.save(program, str(path))
        with pytest.raises(SubmissionError) as refused:
            evaluate(path, data, progress=False)
        message = str(refused.value)
        assert f"exported with a fixed {name} of" in message and "Dim.AUTO" in message
        assert "\n" not in message


class FlatLinear(torch.nn.Module):
    """Works at one image size only: a Linear layer on the flattened pixels."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.head = torch.nn.Linear(3 * size * size, 4)

    def forward(self, x):
        return self.head(x.flatten(1))


class Pair(torch.nn.Module):
    def forward(self, x):
        return x.mean((2, 3)), x.amax((2, 3))


def test_a_model_of_another_size_or_with_two_outputs_is_told_the_fix_that_fits(data, tmp_path):
    size = 2 * ThreeDIdent(data, "test").resolution
    flat = torch.export.export(FlatLinear(size).eval(), (torch.rand(2, 3, size, size),),
                               dynamic_shapes=({0: torch.export.Dim.AUTO},))
    pair = torch.export.export(Pair().eval(), (torch.rand(2, 3, 8, 8),),
                               dynamic_shapes=({0: torch.export.Dim.AUTO, 2: torch.export.Dim.AUTO,
                                                3: torch.export.Dim.AUTO},))
    for program, name, words in [
            (flat, "flat.pt2", [f"fixed height of {size}", "interpolate(x, size=", "AdaptiveAvgPool2d"]),
            (pair, "pair.pt2", ["returns 2 values", "Fix: return the features alone"])]:
        torch.export.save(program, str(tmp_path / name))
        with pytest.raises(SubmissionError) as refused:
            evaluate(tmp_path / name, data, progress=False)
        message = str(refused.value)
        assert all(word in message for word in words), message
        assert message.count("Fix:") == 1 and "training mode" not in message


@pytest.mark.parametrize("change", ["scale", "offset"])
def test_metrics_do_not_move_when_features_are_scaled_or_shifted(data, tmp_path, change):
    z = np.load(data / "test/raw_latents.npy").astype(np.float64)
    rng = np.random.default_rng(0)
    h = np.tanh(z @ rng.normal(size=(10, 12))) + 0.05 * rng.normal(size=(300, 12))
    np.save(tmp_path / "base.npy", h)
    base = evaluate(tmp_path / "base.npy", data, progress=False).document
    factors = [1e-150, 1e-30, 1e30, 1e150] if change == "scale" else [-1e6, -3.5, 7e4, 1e6]
    for factor in factors:
        np.save(tmp_path / "moved.npy", h * factor if change == "scale" else h + factor)
        moved = evaluate(tmp_path / "moved.npy", data, progress=False).document
        for key, value in base["metrics"].items():
            assert abs(moved["metrics"][key] - value) <= 1e-9, (factor, key)
        for a, b in zip(base["per_latent"], moved["per_latent"], strict=True):
            for key in ("linear_r2", "mcc_pearson"):
                assert abs(a[key] - b[key]) <= 1e-9


def test_the_true_latents_times_a_huge_constant_still_score_one(data, tmp_path):
    z = np.load(data / "test/raw_latents.npy").astype(np.float64)
    np.save(tmp_path / "huge.npy", z * 1e200)
    r = evaluate(tmp_path / "huge.npy", data, progress=False)
    assert r.metrics["mcc_pearson"] == pytest.approx(1.0) and r.metrics["linear_r2"] == pytest.approx(1.0)


def test_non_finite_numbers_never_pass_the_result_schema(data, tmp_path):
    np.save(tmp_path / "true.npy", np.load(data / "test/raw_latents.npy"))
    document = evaluate(tmp_path / "true.npy", data, progress=False).document
    cases = ((("metrics", "linear_r2"), float("nan")), (("per_latent", 3, "mcc_pearson"), float("inf")),
             (("wall_time_s",), float("nan")))
    for path, bad in cases:
        broken = json.loads(json.dumps(document))
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = bad
        with pytest.raises(ResultError, match="/".join(str(p) for p in path)):
            validate_result(broken)


def test_cl_ica_mean_keeps_negative_r2_as_the_original_did(data, tmp_path):
    from ident3d.protocols import REGISTRY

    z = np.load(data / "test/raw_latents.npy").astype(np.float64)
    h = np.concatenate([z[:, :5], np.random.default_rng(1).normal(size=(300, 40))], axis=1)
    np.save(tmp_path / "half.npy", h)
    raw = REGISTRY["cl-ica-2021"].score(z, h).per_latent("linear_r2")
    assert (raw < 0).any(), "40 noise features over 150 fit points should overfit some latents"
    r = evaluate(tmp_path / "half.npy", data, protocol="cl-ica-2021", progress=False)
    assert r.metrics["linear_r2"] == pytest.approx(max(0.0, raw.mean()), abs=1e-12)
    v1 = evaluate(tmp_path / "half.npy", data, progress=False)
    clipped = [p["linear_r2"] for p in v1.document["per_latent"]]
    assert v1.metrics["linear_r2"] == pytest.approx(np.mean(clipped))


def test_architectures_come_from_entry_points_and_unknown_ones_list_the_known():
    from ident3d.architectures import build, known
    from ident3d.errors import SubmissionError

    assert "resnet18-contrastive" in known()
    model = build("resnet18-contrastive", {"latent_dim": 4, "space": "sphere"})
    assert model.head[-1].out_features == 4
    with pytest.raises(SubmissionError, match="not a registered architecture.*resnet18-contrastive"):
        build("resnet99", {})


@pytest.mark.slow
def test_the_runner_matches_a_plain_call_eagerly_and_compiled_with_a_short_last_batch(data):
    """Channels-last and compiled runs give the plain model's features; a short last batch is
    padded for the compiled model (one compilation) and the padding never reaches the output."""
    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import encode

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5))
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.2, 0.2)  # batch norm that does something when folded
        model[1].running_var.uniform_(0.5, 2.0)
    dataset = ThreeDIdent(data, "test")
    indices = np.arange(70)  # batches of 32, 32 and a short 6
    with torch.inference_mode():
        plain = model.eval()(torch.from_numpy(dataset.load_batch(indices)).permute(0, 3, 1, 2).float() / 255)
    cpu = torch.device("cpu")
    eager = encode(model, dataset, indices, cpu, batch_size=32, progress=False)
    compiled = encode(model, dataset, indices, cpu, batch_size=32, progress=False, compile=True)
    assert eager.shape == compiled.shape == (70, 5)
    np.testing.assert_allclose(eager, plain.numpy(), atol=1e-6)
    np.testing.assert_allclose(compiled, plain.numpy(), atol=1e-5)



def test_an_evaluation_of_a_track_opens_each_image_file_once(tmp_path, monkeypatch):
    """The encoding's reads serve the identity proof (each file's sha256) and the pixel fingerprint
    (the images it kept), and the sandbox's reproducibility check and probes re-encode kept images:
    no image file is opened twice. The split is made a track here, its re-render check recorded in
    this machine's cache as a past check leaves it."""
    import collections
    import dataclasses
    import os

    from ident3d import tracks
    from ident3d.atomic import sha256_array
    from ident3d.tracks.identity import identity_proof

    root = tmp_path / "data"
    write_fake_split(root, "test", n=40, size=16, seed=3)
    split = ThreeDIdent(root, "test")
    mean, std = tracks.fingerprint(split.layout, 8, split.padding)
    spec = tracks.SplitSpec(n=40, seed=3, latents_sha256=sha256_array(split.latents))
    track = dataclasses.replace(tracks.get_track("3dident-v2-64"), name="fake", resolution=16, render={},
                                splits={"test": spec}, recheck={"images": 4, "tolerance": 2.0},
                                fingerprint={"images": 8, "mean": mean, "std": std, "tolerance": 0.002})
    known = {**tracks.tracks(), "fake": track}
    monkeypatch.setattr(tracks.registry, "tracks", lambda: known)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    proof = identity_proof(track, split.layout, 40)  # from reading every file: the reads must agree
    proof.parent.mkdir(parents=True)
    proof.write_text("fake@1 test: a random sample re-rendered\n")
    model = export(tmp_path, ColourEncoder())

    opened: collections.Counter[str] = collections.Counter()
    os_open = os.open

    def counting_open(path, *args, **kwargs):
        opened[os.fspath(path)] += 1
        return os_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    result = evaluate(model, root, batch_size=8, progress=False)  # 5 batches: every probe is due
    assert result.document["dataset"]["track"] == "fake@1"
    images = [os.fspath(split.image_path(i)) for i in range(40)]
    assert [opened[path] for path in images] == [1] * 40


def test_a_split_whose_manifest_records_pairs_is_scored_by_pair(tmp_path, monkeypatch):
    """The evaluator tells the protocol what the split's manifest says: rows 2i and 2i + 1 are a pair
    (a content/style or ``render --pairs`` split), so no pair is parted between fit and score rows."""
    from ident3d import protocols

    told = []
    halves = type(protocols.REGISTRY["ident3d-eval-v1"])
    score = halves.score

    def spy(self, z, h, names=None, ood=None, paired=False):
        told.append(paired)
        return score(self, z, h, names, ood, paired)

    monkeypatch.setattr(halves, "score", spy)
    for pairs in (None, {"style": ["object_hue"]}):
        root = tmp_path / f"data-{bool(pairs)}"
        write_fake_split(root, "test", n=64, size=8)
        if pairs:
            manifest = json.loads((root / "test/manifest.json").read_text())
            (root / "test/manifest.json").write_text(json.dumps({**manifest, "pairs": pairs}))
        np.save(tmp_path / "h.npy", np.load(root / "test/raw_latents.npy"))
        result = evaluate(tmp_path / "h.npy", root, progress=False).document
        assert result["n_fit"] % 2 == 0
    assert told == [False, True]
