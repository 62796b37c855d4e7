"""Hostile and careless input through the real CLI: one `error:` line naming the culprit, the right
exit code (1 failure, 2 usage), no traceback, no file changed outside the command's output and no
half-written output. Every case runs ``ident3d.cli.main`` in this process on files crafted here.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FakeZenodo, write_fake_split
from hostile import (
    bomb_png,
    node_target,
    pickle_bytes,
    pickled_weights,
    quiet_sample_inputs,
    rewrite_zip,
    shape_expression,
    tar_with,
)
from safetensors.torch import save_file

from ident3d.cli import main

SIZE = 16


class MeanColour(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(6))

    def forward(self, x):
        return torch.cat([x.mean(dim=(2, 3)), x.amax(dim=(2, 3))], dim=1) * self.scale


class NaNOut(torch.nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3)) * torch.nan


def export(module: torch.nn.Module, path: Path) -> Path:
    program = torch.export.export(module.eval(), (torch.rand(2, 3, SIZE, SIZE),),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(program, str(path))
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """Every file the cases read, made once; the cases must leave all of it unchanged."""
    w = tmp_path_factory.mktemp("world")
    marker = w / "pwned"
    write_fake_split(w / "data", "test", n=40, size=SIZE)
    write_fake_split(w / "data", "train", n=40, size=SIZE, seed=1)
    clean = export(MeanColour(), w / "clean.pt2")
    export(NaNOut(), w / "nan.pt2")
    models = w / "models"
    models.mkdir()
    rewrite_zip(clean, models / "quiet.pt2",
                {"data/sample_inputs/model.pt": quiet_sample_inputs(marker, SIZE)})
    rewrite_zip(clean, models / "pickled-weights.pt2", pickled_weights(marker))
    rewrite_zip(clean, models / "torch-save.pt2", node_target("torch.save"))
    rewrite_zip(clean, models / "builtin-exec.pt2", node_target("builtins.exec"))
    rewrite_zip(clean, models / "expr.pt2", shape_expression(marker))
    rewrite_zip(clean, models / "aoti.pt2", add={"data/aotinductor/model/model.so": b"\x7fELF"})
    rewrite_zip(clean, models / "custom-obj.pt2", add={"data/constants/custom_obj_0": pickle_bytes(marker)})
    (models / "empty.pt2").write_bytes(b"")
    (models / "half.pt2").write_bytes(clean.read_bytes()[: clean.stat().st_size // 2])
    (models / "model.pt").write_bytes(pickle_bytes(marker))
    (models / "model.onnx").write_bytes(b"onnx")
    (models / "empty.npy").write_bytes(b"")
    z = np.load(w / "data/test/raw_latents.npy")
    buffer = io.BytesIO()
    np.save(buffer, z)
    (models / "truncated.npy").write_bytes(buffer.getvalue()[:100])
    np.save(models / "objects.npy", np.array([{"a": 1}] * 40, dtype=object), allow_pickle=True)
    np.save(models / "complex.npy", z.astype(np.complex128) + 1j)
    np.save(models / "strings.npy", np.array([["x"] * 10] * 40))
    nan = z.astype(np.float64)
    nan[3, 2] = np.nan
    np.save(models / "nan.npy", nan)
    inf = z.astype(np.float64)
    inf[5, 0] = np.inf
    np.save(models / "inf.npy", inf)
    np.save(models / "short.npy", z[:39])
    np.save(models / "cube.npy", z[:, :, None])
    (models / "empty.safetensors").write_bytes(b"")
    weights = {"w": torch.zeros(3)}
    save_file(weights, str(models / "ok.safetensors"), metadata={"arch": "resnet18-contrastive"})
    data = (models / "ok.safetensors").read_bytes()
    (models / "half.safetensors").write_bytes(data[: len(data) - 4])
    save_file(weights, str(models / "huge.safetensors"),
              metadata={"arch": "resnet18-contrastive", "config": json.dumps({"latent_dim": 10**9})})
    save_file(weights, str(models / "noarch.safetensors"))

    bad = w / "bad"  # broken copies of a split, one problem each
    for name in ("empty-latents", "truncated-latents", "complex-latents", "range-latents",
                 "zero-rows", "one-image", "broken-manifest", "missing-image", "packed-garbage",
                 "bomb-image"):
        write_fake_split(bad / name, "test", n=1 if name == "one-image" else 12, size=SIZE)
    (bad / "empty-latents/test/raw_latents.npy").write_bytes(b"")
    latents = bad / "truncated-latents/test/raw_latents.npy"
    latents.write_bytes(latents.read_bytes()[:90])
    np.save(bad / "complex-latents/test/raw_latents.npy", np.zeros((12, 10), np.complex64))
    np.save(bad / "range-latents/test/raw_latents.npy", np.full((12, 10), 3.0, np.float32))
    np.save(bad / "zero-rows/test/raw_latents.npy", np.zeros((0, 10), np.float32))
    (bad / "broken-manifest/test/manifest.json").write_text("{not json")
    (bad / "missing-image/test/images/07.png").unlink()
    (bad / "bomb-image/test/images/03.png").write_bytes(bomb_png())
    manifest = json.loads((bad / "packed-garbage/test/manifest.json").read_text())
    manifest["packed"] = {"file": "images.npy", "shape": [12, SIZE, SIZE, 3], "dtype": "uint8",
                          "sha256": "0" * 64}
    (bad / "packed-garbage/test/manifest.json").write_text(json.dumps(manifest))
    np.save(bad / "packed-garbage/test/images.npy", np.zeros((3, 2), np.float64))

    (w / "a-file").write_text("not a folder")
    runs = w / "runs"
    (runs / "empty").mkdir(parents=True)
    (runs / "broken").mkdir()
    (runs / "broken/config.json").write_text("{}")
    (runs / "broken/checkpoint.safetensors").write_bytes(b"\x00" * 64)
    render = w / "render"
    (render / "train").mkdir(parents=True)
    (render / "train/render_job.json").write_text("{truncated")
    write_fake_split(w / "foreign", "train", n=4, size=SIZE)
    results = w / "results"
    results.mkdir()
    result = {"schema": "ident3d-result/1", "metrics": {"linear_r2": float("nan")}}
    (results / "nan.json").write_text(json.dumps(result))
    (results / "garbage.json").write_bytes(b"\xff\xfe\x00garbage")
    (results / "truncated.json").write_text('{"schema": "ident3d-res')
    from ident3d.evaluation import evaluate

    evaluate(clean, w / "data", progress=False).save(results / "clean.json")
    entries = w / "entries"
    (entries / "ident3d-eval-v1").mkdir(parents=True)
    (entries / "ident3d-eval-v1" / "Bad2026Entry.json").write_text('{"id": "Bad2026Entry"}')
    servers = {kind: FakeZenodo({"3dident_test.tar": tar_with(kind)}) for kind in TAR_KINDS}
    (w / "urls.json").write_text(json.dumps({kind: server.url for kind, server in servers.items()}))
    yield w
    for server in servers.values():
        server.close()


TAR_KINDS = ("symlink", "hardlink", "fifo", "device")


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]  # "{w}" is replaced by the world folder
    code: int
    culprit: str  # must appear in the error line
    output: str | None = None  # a path the command may write (must not exist afterwards)


M, D = "{w}/models", "{w}/data"
EVAL = ["evaluate", "--data", D, "--out", "{w}/out/result.json", "--model"]
OUT = "{w}/out/result.json"

CASES = [
    # submissions: models are data, never code
    Case("pickle-model", [*EVAL, f"{M}/model.pt"], 1, "pickle", OUT),
    Case("pt2-quiet-sample-inputs", [*EVAL, f"{M}/quiet.pt2"], 1, "sample_inputs", OUT),
    Case("pt2-pickled-weights", [*EVAL, f"{M}/pickled-weights.pt2"], 1, "stored as a pickle", OUT),
    Case("pt2-torch-save-operator", [*EVAL, f"{M}/torch-save.pt2"], 1, "torch.save", OUT),
    Case("pt2-exec-operator", [*EVAL, f"{M}/builtin-exec.pt2"], 1, "builtins.exec", OUT),
    Case("pt2-shape-expression", [*EVAL, f"{M}/expr.pt2"], 1, "shape expression", OUT),
    Case("pt2-compiled-code", [*EVAL, f"{M}/aoti.pt2"], 1, "AOTInductor", OUT),
    Case("pt2-custom-object", [*EVAL, f"{M}/custom-obj.pt2"], 1, "custom_obj_0", OUT),
    Case("pt2-empty", [*EVAL, f"{M}/empty.pt2"], 1, "empty.pt2", OUT),
    Case("pt2-truncated", [*EVAL, f"{M}/half.pt2"], 1, "half.pt2", OUT),
    Case("pt2-nan-outputs", [*EVAL, "{w}/nan.pt2"], 1, "non-finite", OUT),
    Case("unknown-suffix", [*EVAL, f"{M}/model.onnx"], 1, "model.onnx", OUT),
    Case("missing-model", [*EVAL, f"{M}/nothing.pt2"], 1, "nothing.pt2", OUT),
    Case("npy-empty", [*EVAL, f"{M}/empty.npy"], 1, "empty.npy", OUT),
    Case("npy-truncated", [*EVAL, f"{M}/truncated.npy"], 1, "truncated.npy", OUT),
    Case("npy-objects", [*EVAL, f"{M}/objects.npy"], 1, "objects.npy", OUT),
    Case("npy-complex", [*EVAL, f"{M}/complex.npy"], 1, "complex", OUT),
    Case("npy-strings", [*EVAL, f"{M}/strings.npy"], 1, "real numbers", OUT),
    Case("npy-nan", [*EVAL, f"{M}/nan.npy"], 1, "row 3, column 2", OUT),
    Case("npy-inf", [*EVAL, f"{M}/inf.npy"], 1, "row 5, column 0", OUT),
    Case("npy-short", [*EVAL, f"{M}/short.npy"], 1, "expected 40 rows", OUT),
    Case("npy-3d", [*EVAL, f"{M}/cube.npy"], 1, "shape", OUT),
    Case("safetensors-empty", [*EVAL, f"{M}/empty.safetensors"], 1, "empty.safetensors", OUT),
    Case("safetensors-truncated", [*EVAL, f"{M}/half.safetensors"], 1, "half.safetensors", OUT),
    Case("safetensors-huge-config", [*EVAL, f"{M}/huge.safetensors"], 1, "latent_dim", OUT),
    Case("safetensors-no-arch", [*EVAL, f"{M}/noarch.safetensors"], 1, "--arch", OUT),
    Case("safetensors-wrong-weights", [*EVAL, f"{M}/ok.safetensors"], 1, "do not fit", OUT),
    # evaluate: arguments, devices, outputs
    Case("out-is-a-folder", ["evaluate", "--data", D, "--model", "{w}/clean.pt2", "--out", "{w}/models"],
         1, "is a folder"),
    Case("out-under-a-file", ["evaluate", "--data", D, "--model", "{w}/clean.pt2", "--out",
                              "{w}/a-file/result.json"], 1, "a-file"),
    Case("batch-size-zero", [*EVAL, "{w}/clean.pt2", "--batch-size", "0"], 2, "--batch-size", OUT),
    Case("batch-size-negative", [*EVAL, "{w}/clean.pt2", "--batch-size", "-3"], 2, "--batch-size", OUT),
    Case("device-cuda-without-gpu", [*EVAL, "{w}/clean.pt2", "--device", "cuda"], 1, "CUDA", OUT),
    Case("device-gpu-without-gpu", [*EVAL, "{w}/clean.pt2", "--device", "gpu"], 1, "--device gpu", OUT),
    Case("device-nonsense", [*EVAL, "{w}/clean.pt2", "--device", "tpu9"], 2, "tpu9", OUT),
    Case("protocol-unknown", [*EVAL, "{w}/clean.pt2", "--protocol", "mine"], 2, "--protocol", OUT),
    # evaluate: broken data
    Case("data-missing", ["evaluate", "--data", "{w}/nowhere", "--model", "{w}/clean.pt2", "--out", OUT],
         1, "nowhere: no such folder", OUT),
    *[Case(f"data-{name}", ["evaluate", "--data", f"{{w}}/bad/{name}", "--model", "{w}/clean.pt2",
                            "--out", OUT], 1, culprit, OUT)
      for name, culprit in (("empty-latents", "raw_latents.npy"), ("truncated-latents", "raw_latents.npy"),
                            ("complex-latents", "real numbers"), ("range-latents", "row 0, column 0"),
                            ("zero-rows", "empty"), ("one-image", "at least 4"),
                            ("broken-manifest", "manifest.json"), ("missing-image", "07.png"),
                            ("packed-garbage", "images.npy"), ("bomb-image", "03.png"))],
    # audit
    Case("audit-no-split", ["audit", "{w}/models"], 1, "no split found"),
    # train: numbers and folders at the boundary
    *[Case(f"train-{flag}-{value}", ["train", "--data", D, "--out", "{w}/out/run", f"--{flag}", value],
           2, f"--{flag}", "{w}/out/run")
      for flag, value in (("lr", "-1"), ("lr", "0"), ("lr", "nan"), ("iterations", "0"),
                          ("batch-size", "0"), ("seed", "-1"), ("workers", "-2"))],
    Case("train-resume-empty", ["train", "--data", D, "--out", "{w}/runs/empty", "--resume"], 1,
         "no run there"),
    Case("train-resume-corrupt-checkpoint", ["train", "--data", D, "--out", "{w}/runs/broken", "--resume",
                                             "--preset", "smoke"], 1, "checkpoint.safetensors"),
    Case("train-unknown-preset", ["train", "--data", D, "--out", "{w}/out/run", "--preset", "nope"], 2,
         "nope", "{w}/out/run"),
    Case("train-out-is-a-file", ["train", "--data", D, "--out", "{w}/a-file"], 1, "a-file"),
    Case("train-cuda-without-gpu", ["train", "--data", D, "--out", "{w}/out/run", "--device", "cuda",
                                    "--preset", "smoke"], 1, "CUDA", "{w}/out/run"),
    # render: refused before Blender starts
    *[Case(f"render-{flag}-{value}", ["render", "--out", "{w}/out/r", f"--{flag}", value], 2, f"--{flag}",
           "{w}/out/r")
      for flag, value in (("n", "0"), ("resolution", "0"), ("samples", "-1"), ("workers", "0"))],
    Case("render-over-a-dataset", ["render", "--data", D, "--split", "test", "--n", "4"], 1,
         "choose an empty --data"),
    Case("render-corrupt-job", ["render", "--out", "{w}/render", "--split", "train", "--n", "4"], 1,
         "render_job.json"),
    Case("render-latents-empty", ["render", "--out", "{w}/out/r", "--latents", f"{M}/empty.npy"], 1,
         "empty.npy", "{w}/out/r"),
    Case("render-latents-complex", ["render", "--out", "{w}/out/r", "--latents", f"{M}/complex.npy"], 1,
         "complex", "{w}/out/r"),
    Case("render-out-is-a-file", ["render", "--out", "{w}/a-file", "--n", "2"], 1, "a-file"),
    Case("render-into-foreign-data", ["render", "--out", "{w}/foreign", "--split", "train", "--n", "4"], 1,
         "not rendered by this command"),
    Case("traverse-not-png", ["traverse", "--out", "{w}/out/f.jpg"], 1, "f.jpg", "{w}/out/f.jpg"),
    Case("traverse-steps-zero", ["traverse", "--out", "{w}/out/f.png", "--steps", "0"], 2, "--steps",
         "{w}/out/f.png"),
    Case("pack-missing-root", ["pack", "{w}/nowhere"], 1, "raw_latents.npy"),
    Case("info-unknown-variant", ["info", "--variant", "v9"], 2, "--variant"),
    # download: archives hold regular files only; existing data is never replaced
    *[Case(f"download-{kind}", ["download", "--root", f"{{w}}/out/dl-{kind}", "--split", "test",
                                "--record", "999", "--base-url", f"{{url:{kind}}}"], 1,
           "3dident/test/images/0.png",
           f"{{w}}/out/dl-{kind}/test") for kind in TAR_KINDS],
    Case("download-over-user-data", ["download", "--root", "{w}/data", "--split", "test", "--record", "999",
                                     "--base-url", "{url:symlink}"], 1, "already exists"),
    # leaderboard
    Case("add-nan-result", ["leaderboard", "add", "{w}/results/nan.json", "--id", "Doe2026Nan",
                            "--entries", "{w}/out/entries"], 1, "nan.json", "{w}/out/entries"),
    Case("add-garbage-result", ["leaderboard", "add", "{w}/results/garbage.json", "--id", "Doe2026Bad",
                                "--entries", "{w}/out/entries"], 1, "garbage.json", "{w}/out/entries"),
    Case("compare-truncated-result", ["leaderboard", "compare", "{w}/results/truncated.json"], 1,
         "truncated.json"),
    Case("add-malformed-id", ["leaderboard", "add", "{w}/results/clean.json", "--id", "tiny",
                              "--entries", "{w}/out/entries"], 1, "'tiny' is not of the form <Author><Year>",
         "{w}/out/entries"),
    Case("add-missing-result", ["leaderboard", "add", "{w}/results/none.json", "--id", "Doe2026None",
                                "--entries", "{w}/out/entries"], 1, "none.json", "{w}/out/entries"),
    Case("add-checkpoint-crafted-pt2", ["leaderboard", "add", "{w}/results/clean.json", "--id", "Doe2026Evil",
                                        "--checkpoint", f"{M}/quiet.pt2", "--data", D, "--entries",
                                        "{w}/out/entries"], 1, "sample_inputs", "{w}/out/entries"),
    Case("build-bad-entry", ["leaderboard", "build", "--entries", "{w}/entries", "--markdown",
                             "{w}/out/LB.md", "--site", "{w}/out/site.html"], 1, "Bad2026Entry.json",
         "{w}/out/LB.md"),
]


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case: Case, world: Path, capsys):
    before = snapshot(world)
    urls = json.loads((world / "urls.json").read_text())
    argv = [a.replace("{w}", str(world)) for a in case.argv]
    argv = [urls[a[5:-1]] if a.startswith("{url:") else a for a in argv]
    try:
        code = main(["-q", *argv])
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    captured = capsys.readouterr()
    assert code == case.code, captured.err
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err  # usage errors too
    assert case.culprit in lines[0], lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert not (world / "pwned").exists(), "a crafted file ran code"
    after = snapshot(world)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert not {k for k in changed if not k.startswith("out")}, f"files changed: {sorted(changed)}"
    if case.output:
        assert not Path(case.output.replace("{w}", str(world))).exists(), "half-written output"


def test_there_are_at_least_fifty_cases():
    assert len(CASES) >= 50


def test_python_api_refuses_nonsense_at_the_boundary(world):
    from ident3d.datasets import ThreeDIdent
    from ident3d.errors import DatasetError, LatentError, SubmissionError
    from ident3d.evaluation import evaluate
    from ident3d.pairs import ContrastivePairs

    train = ThreeDIdent(world / "data", "train")
    with pytest.raises(DatasetError, match="epoch_length = 0"):
        ContrastivePairs(train, epoch_length=0)
    with pytest.raises(LatentError, match="scale"):
        ContrastivePairs(train, scale=-0.1)
    with pytest.raises(DatasetError, match="at least 2"):
        ContrastivePairs(ThreeDIdent(world / "bad/one-image", "test"))
    with pytest.raises(DatasetError, match="raw_latents.npy"):
        ThreeDIdent(world / "bad/truncated-latents", "test")
    with pytest.raises(SubmissionError, match="sample_inputs"):
        evaluate(world / "models/quiet.pt2", world / "data", progress=False)
    assert not (world / "pwned").exists()


def test_a_result_never_replaces_a_file_that_appeared_at_its_out_while_it_ran(tmp_path):
    """Two evaluations into one --out: the exists check at start passes for both, the second write
    finds the first's file and writes nothing (unless --overwrite)."""
    from test_leaderboard import fake_result

    from ident3d.outputs import OutputError
    from ident3d.results import Result

    out = tmp_path / "result.json"
    first, second = Result.parse(fake_result(0.8, 0.7)), Result.parse(fake_result(0.5, 0.4))
    first.save(out, overwrite=False)
    kept = out.read_bytes()
    with pytest.raises(OutputError, match="a file appeared there while this command ran"):
        second.save(out, overwrite=False)
    assert out.read_bytes() == kept and [p.name for p in tmp_path.iterdir()] == ["result.json"]
    second.save(out, overwrite=True)
    assert json.loads(out.read_text())["metrics"]["linear_r2"] == 0.5


def test_sighup_stops_a_command_as_sigterm_does_and_the_handlers_are_restored():
    import os
    import signal

    from ident3d.cli import Stopped, stopped_by_signals

    before = signal.getsignal(signal.SIGHUP)
    with pytest.raises(Stopped) as stop, stopped_by_signals():
        os.kill(os.getpid(), signal.SIGHUP)
        signal.sigtimedwait([], 1)  # the handler runs at the next bytecode boundary
    assert stop.value.signum == signal.SIGHUP and isinstance(stop.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGHUP) is before
