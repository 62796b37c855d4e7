import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import write_fake_split

from ident3d.errors import ResultError, SubmissionError
from ident3d.evaluation import evaluate, validate_result


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


def test_cli_writes_a_valid_result(data, tmp_path):
    np.save(tmp_path / "true.npy", np.load(data / "test/raw_latents.npy"))
    out = tmp_path / "result.json"
    cli = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "evaluate", "--data", str(data),
                          "--model", str(tmp_path / "true.npy"), "--name", "oracle", "--out",
                          str(out)], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert "object_hue" in cli.stdout
    document = json.loads(out.read_text())
    validate_result(document)
    assert document["model"]["name"] == "oracle"
    document["metrics"]["linear_r2"] = 1.5
    with pytest.raises(ResultError, match="metrics/linear_r2"):
        validate_result(document)
