"""Crafted model files against the sandbox (docs/submissions.md, "What the sandbox contains").

Every file is built here from a real ``torch.export`` of a small encoder, then edited the way a
hostile submitter would. Each case runs ``ident3d evaluate`` through the real CLI and must end in a
refusal or a contained failure: exit 1, one ``error:`` line naming the model file and the culprit,
no marker file, the planted secret nowhere in the output, no file changed outside ``--out``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import write_fake_split
from hostile import edit_json, rewrite_zip, touch_code

from ident3d.cli import main

SIZE = 16
SECRET = "SECRET-7f3a-do-not-leak"


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.register_buffer("shift", torch.zeros(4))
        self.head = torch.nn.Linear(4, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x).mean((2, 3)) + self.shift)


class Allocates(torch.nn.Module):  # asks for 16 GiB at run time
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        big = torch.ones(1 << 16, 1 << 16, dtype=torch.float32)
        return x.mean((2, 3)) + big[:1, :3]


class Spins(torch.nn.Module):  # a chain of large matmuls: minutes of CPU per batch
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.ones(3000, 3000) / 3000
        for _ in range(100):
            w = w @ w
        return x.mean((2, 3)) + w[:1, :3]


class BatchStatistics(torch.nn.Module):  # standardises over the batch: scores depend on --batch-size
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.mean((2, 3))
        return (h - h.mean(0, keepdim=True)) / (h.std(0, keepdim=True) + 1e-6)


class Drifts(torch.nn.Module):  # changes its own state on every call
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count.add_(1)
        return x.mean((2, 3)) * self.count


class DriftsThroughAlias(Drifts):  # the same, through an alias of the buffer
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.ops.aten.alias(self.count).add_(1)
        return x.mean((2, 3)) * self.count


class StatisticsAboveEight(torch.nn.Module):  # standardises over the batch only when it holds more than 8
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.mean((2, 3))
        big = (torch.ones_like(h[:, :1]) * x.shape[0] > 8).to(h.dtype)
        return big * (h - h.mean(0, keepdim=True)) / (h.std(0, keepdim=True) + 1e-6) + (1 - big) * h


class Casts(torch.nn.Module):  # a .to(dtype) node, whose dtype a crafted file turns into a number
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean((2, 3)).to(torch.float64)


def numbered_dtype(document: dict) -> None:
    node = next(n for n in nodes(document) if n["target"] == "torch.ops.aten.to.dtype")
    next(i for i in node["inputs"] if i["name"] == "dtype")["arg"] = {"as_int": -3}


class Wide(torch.nn.Module):  # 100,000 features per image
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean((2, 3)).repeat(1, 33334)


class FixedBatch(torch.nn.Module):  # export specialises the batch to 2: fails at run time
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(2, -1)[:, :5]


class OutOfRange(torch.nn.Module):  # a bounds-checked index beyond the tensor: an error, not a read
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("index", torch.tensor([0, 1, 5000]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1).index_select(1, self.index)


class Random(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean((2, 3)) + torch.rand_like(x.mean((2, 3)))


class TrainingBatchNorm(torch.nn.Module):  # exported in training mode: mutates its buffers
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.mean((2, 3)))


class DropoutCache(torch.nn.Module):  # eval-mode dropout returns its input itself: a buffer to write
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.ops.aten.dropout(self.cache, 0.0, False).add_(x.mean())
        return x.mean((2, 3)).repeat(1, 2) + self.cache


class EinsumCache(DropoutCache):  # a one-operand einsum returns a view of its operand
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        view = torch.ops.aten.einsum("i->i", [self.cache])
        view.copy_(view + x.mean())
        return x.mean((2, 3)).repeat(1, 2) + self.cache


class NormWritesStatistics(torch.nn.Module):  # batch_norm told training=True rewrites running_mean
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("var", torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.ops.aten.batch_norm(x, None, None, self.mean, self.var, True, 1.0, 1e-5, False)
        return x.mean((2, 3)) + self.mean


class ReturnsBuffer(torch.nn.Module):  # its output is a view of its own buffer
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.zeros(1, 6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.table.expand(x.shape[0], 6)


class Attention(torch.nn.Module):  # crafted below: a key shorter than the value
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(2).transpose(1, 2)  # (B, pixels, 3): sequences of pixels
        return torch.nn.functional.scaled_dot_product_attention(h[:, :8], h[:, 8:16], h[:, 16:24]).flatten(1)


class Attention4d(torch.nn.Module):  # exported as is: a 1-row key beside a 64-row value, 4-d
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.flatten(1)[:, :64]
        b = x.shape[0]
        q, k = t.reshape(b, 2, 4, 8), t[:, :16].reshape(b, 2, 1, 8)
        v = torch.cat([t, t], 1).reshape(b, 2, 64, 1).expand(b, 2, 64, 8).contiguous()
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).flatten(1)


class TinyScaleUpsample(torch.nn.Module):  # nearest upsampling of uint8 at scales of 1e-20
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.aten.upsample_nearest2d.default((x * 255).to(torch.uint8), [64, 64], 1e-20, 1e-20)
        return y.float().flatten(1)[:, :10]


def short_key(document: dict) -> None:
    """The key's slice ends 4 pixels early: the value stays 8 long."""
    def argument(node: dict, name: str) -> dict:
        return next(i for i in node["inputs"] if i["name"] == name)["arg"]

    key = next(n for n in nodes(document) if n["target"] == "torch.ops.aten.slice.Tensor"
               and argument(n, "start") == {"as_int": 8})
    argument(key, "end")["as_int"] = 12


def export(module: torch.nn.Module, path: Path, train: bool = False) -> Path:
    module = module.train() if train else module.eval()
    program = torch.export.export(module, (torch.rand(2, 3, SIZE, SIZE),),
                                  dynamic_shapes=({0: torch.export.Dim.AUTO},))
    torch.export.save(program, str(path))
    return path


def graph(change):
    return {"models/model.json": edit_json(change)}


def nodes(document: dict) -> list[dict]:
    return document["graph_module"]["graph"]["nodes"]


def set_target(target: str):
    def change(document: dict) -> None:
        nodes(document)[0]["target"] = target
    return graph(change)


def set_expression(text: str):
    def change(document: dict) -> None:
        for value in document["graph_module"]["graph"]["tensor_values"].values():
            for size in value["sizes"]:
                if "as_expr" in size:
                    size["as_expr"]["expr_str"] = text
                    return
        raise AssertionError("no symbolic size in the export")
    return graph(change)


def rename(kind: str, evil: str):
    """Put ``evil`` where torch pastes a name into the Python source it generates."""
    def change(document: dict) -> None:
        gm = document["graph_module"]
        specs = gm["signature"]["input_specs"]
        if kind in ("parameter", "buffer"):
            spec = next(s[kind] for s in specs if kind in s)
            spec[f"{kind}_name"] = evil
        elif kind == "input":
            old = next(s["user_input"] for s in specs if "user_input" in s)["arg"]["as_tensor"]["name"]
            _replace_name(document, old, evil)
        elif kind == "output":
            old = gm["graph"]["outputs"][0]["as_tensor"]["name"]
            _replace_name(document, old, evil)
        elif kind == "node":
            old = nodes(document)[0]["outputs"][0]["as_tensor"]["name"]
            _replace_name(document, old, evil)
    return graph(change)


def _replace_name(node, old: str, new: str):
    if isinstance(node, dict):
        for key in list(node):
            if key == old:
                node[new] = node.pop(key)
                key = new
            if node[key] == old:
                node[key] = new
            else:
                _replace_name(node[key], old, new)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            if item == old:
                node[i] = new
            else:
                _replace_name(item, old, new)


def weight_meta(change):
    def apply(data: bytes) -> bytes:
        document = json.loads(data)
        change(next(iter(document["config"].values())))
        return json.dumps(document).encode()
    return {"data/weights/model_weights_config.json": apply}


def from_file(path: str):
    """Replace the first node by aten.from_file reading ``path`` (a real ATen file operator)."""
    def change(document: dict) -> None:
        first = nodes(document)[0]
        first["target"] = "torch.ops.aten.from_file.default"
        first["inputs"] = [{"name": "filename", "arg": {"as_string": path}, "kind": 1},
                           {"name": "shared", "arg": {"as_bool": False}, "kind": 1},
                           {"name": "size", "arg": {"as_int": 64}, "kind": 1}]
    return graph(change)


@dataclass(frozen=True)
class Case:
    name: str
    culprit: str  # must appear in the error line
    flags: tuple[str, ...] = ()


def build_models(w: Path, clean: Path) -> dict[str, Path]:
    """Every crafted file of the table, by case name."""
    marker = w / "pwned"
    inject = f"x'); __import__('os').system('touch {marker}'); ('"
    edits = {
        # names that reach generated Python source
        "param-name-quote": rename("parameter", f"head.weight{inject}"),
        "buffer-name-quote": rename("buffer", f"shift{inject}"),
        "input-name-code": rename("input", f"x=__import__('os').system('touch {marker}')"),
        "output-name-code": rename("output", "linear;import os"),
        "node-name-dunder": rename("node", "__class__"),
        "weights-config-key": {"data/weights/model_weights_config.json": edit_json(lambda d: d[
            "config"].update({f"conv.weight'){inject}": d["config"].pop("conv.weight")}))},
        "guard-code": graph(lambda d: d.update(guards_code=[touch_code(marker)])),
        "namedtuple-fields": graph(lambda d: d["graph_module"].update(
            treespec_namedtuple_fields={"os.system": {"field_names": ["a"]}})),
        # file and socket operators, out-of-bounds views, sparse, random, assert, print
        "from-file-relative": from_file("secret.txt"),
        "from-file-absolute": from_file("/etc/passwd"),
        "from-file-split-latents": from_file(str(w / "data/test/raw_latents.npy")),
        "save-operator": set_target("torch.ops.aten.save.default"),
        "reshape-alias": set_target("torch.ops.aten._reshape_alias.default"),
        "as-strided": set_target("torch.ops.aten.as_strided.default"),
        "sparse-constructor": set_target("torch.ops.aten._sparse_coo_tensor_with_dims_and_tensors.default"),
        "random-operator": set_target("torch.ops.aten.randn.default"),
        "assert-message": set_target("torch.ops.aten._assert_async.msg"),
        "print-operator": set_target("torch.ops.aten._print.default"),
        "python-callable": set_target("builtins.eval"),
        "socket-callable": set_target("socket.socket"),
        "higher-order-op": set_target("torch.ops.higher_order.cond"),
        # a private kernel that takes its sizes from the wrong tensors (reads out of bounds)
        "private-attention-kernel": set_target(
            "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default"),
        # shape expressions sympy would evaluate forever, or as Python
        "expr-power-tower": set_expression("s0 + 0*9**9**9"),
        "expr-factorial": set_expression("factorial(factorial(99))"),
        "expr-srepr-pow": set_expression(
            "Pow(Integer(9), Pow(Integer(9), Integer(9)))"),
        "expr-deep": set_expression("Add(" * 200 + "Integer(1)" + ", Integer(1))" * 200),
        "expr-huge-literal": set_expression("Mul(Integer(99999999999), Symbol('s0'))"),
        # tensor bytes that disagree with their metadata
        "zero-byte-claims-size": weight_meta(lambda m: m["tensor_meta"].update(
            sizes=[{"as_int": 1 << 29}], strides=[{"as_int": 1}])) | {"data/weights/weight_0": b""},
        "view-beyond-storage": weight_meta(lambda m: m["tensor_meta"].update(
            storage_offset={"as_int": 10**6})),
        "negative-stride": weight_meta(lambda m: m["tensor_meta"]["strides"][0].update(as_int=-4)),
        "sparse-layout": weight_meta(lambda m: m["tensor_meta"].update(layout=1)),
        "pickled-weight": weight_meta(lambda m: m.update(use_pickle=True)),
    }
    models = {name: rewrite_zip(clean, w / f"{name}.pt2", change) for name, change in edits.items()}
    # archive-level tricks
    models["duplicate-member"] = w / "duplicate-member.pt2"
    with zipfile.ZipFile(clean) as zin, zipfile.ZipFile(models["duplicate-member"], "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info))
        root = zin.namelist()[0].split("/")[0]
        with pytest.warns(UserWarning, match="Duplicate"):
            zout.writestr(f"{root}/data/weights/weight_0", b"\0" * 16)
    models["compressed-member"] = w / "compressed-member.pt2"
    with zipfile.ZipFile(clean) as zin, zipfile.ZipFile(models["compressed-member"], "w",
                                                        zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as inner:
        inner.writestr("model/data.pkl", b"\0" * (64 << 20))  # 64 MiB from about 64 kB
    models["sample-inputs-bomb"] = rewrite_zip(clean, w / "sample-inputs-bomb.pt2",
                                               {"data/sample_inputs/model.pt": bomb.getvalue()})
    models["fifo"] = w / "fifo.pt2"
    os.mkfifo(models["fifo"])
    # real exports that misbehave only when run
    for name, module, train in (("allocation-bomb", Allocates(), False), ("cpu-bomb", Spins(), False),
                                ("batch-statistics", BatchStatistics(), False), ("drifts", Drifts(), False),
                                ("too-many-features", Wide(), False), ("fixed-batch", FixedBatch(), False),
                                ("index-out-of-range", OutOfRange(), False),
                                ("rand-like", Random(), False), ("training-mode", TrainingBatchNorm(), True),
                                ("drifts-through-alias", DriftsThroughAlias(), False),
                                ("statistics-above-eight", StatisticsAboveEight(), False),
                                ("dropout-alias", DropoutCache(), False),
                                ("einsum-alias", EinsumCache(), False),
                                ("norm-writes-statistics", NormWritesStatistics(), False),
                                ("returns-buffer", ReturnsBuffer(), False),
                                ("attention-4d-short-key", Attention4d(), False),
                                ("upsample-tiny-scale", TinyScaleUpsample(), False)):
        models[name] = export(module, w / f"{name}.pt2", train)
    models["attention-short-key"] = rewrite_zip(export(Attention(), w / "attention.pt2"),
                                                w / "attention-short-key.pt2", graph(short_key))
    models["dtype-as-number"] = rewrite_zip(export(Casts(), w / "casts.pt2"), w / "dtype-as-number.pt2",
                                            graph(numbered_dtype))
    return models


CASES = [
    Case("param-name-quote", "not a plain identifier"),
    Case("buffer-name-quote", "not a plain identifier"),
    Case("input-name-code", "not a plain identifier"),
    Case("output-name-code", "not a plain identifier"),
    Case("node-name-dunder", "not a plain identifier"),
    Case("weights-config-key", "not a plain identifier"),
    Case("namedtuple-fields", "named tuples"),
    Case("from-file-relative", "aten.from_file"),
    Case("from-file-absolute", "aten.from_file"),
    Case("from-file-split-latents", "aten.from_file"),
    Case("save-operator", "aten.save"),
    Case("reshape-alias", "_reshape_alias"),
    Case("as-strided", "as_strided"),
    Case("sparse-constructor", "_sparse_coo_tensor"),
    Case("random-operator", "randn"),
    Case("assert-message", "_assert_async"),
    Case("print-operator", "_print"),
    Case("python-callable", "builtins.eval"),
    Case("socket-callable", "socket.socket"),
    Case("higher-order-op", "higher_order.cond"),
    Case("private-attention-kernel", "private backend kernel"),
    Case("dtype-as-number", "not a torch type"),
    Case("expr-power-tower", "shape expression"),
    Case("expr-factorial", "shape expression"),
    Case("expr-srepr-pow", "shape expression"),
    Case("expr-deep", "shape expression"),
    Case("expr-huge-literal", "shape expression"),
    Case("zero-byte-claims-size", "needs 2147483648 bytes"),
    Case("view-beyond-storage", "needs"),
    Case("negative-stride", "not a concrete size"),
    Case("sparse-layout", "not strided"),
    Case("pickled-weight", "pickle"),
    Case("duplicate-member", "more than once"),
    Case("compressed-member", "compressed"),
    Case("sample-inputs-bomb", "larger than 16777216 bytes"),
    Case("fifo", "not a regular file"),
    Case("rand-like", "rand_like"),
    Case("training-mode", "runs in training mode"),
    Case("allocation-bomb", "memory limit of 1 GiB", ("--memory-limit", "1")),
    Case("cpu-bomb", "longer than 5 s", ("--time-limit", "5")),
    Case("batch-statistics", "batch-dependent"),
    Case("drifts", "changes its own parameter or buffer"),
    Case("drifts-through-alias", "changes its own parameter or buffer 'count'"),
    Case("statistics-above-eight", "batch-dependent"),
    Case("dropout-alias", "changes its own parameter or buffer 'cache'"),
    Case("einsum-alias", "changes its own parameter or buffer 'cache'"),
    Case("norm-writes-statistics", "runs in training mode"),
    Case("returns-buffer", "returns its own parameter or buffer 'table'"),
    Case("attention-short-key", "reference kernels refuse the graph at the batch shape"),
    Case("attention-4d-short-key", "the key has 1 rows and the value 64; they must be equal"),
    Case("upsample-tiny-scale", "a scale of 1e-20 is outside"),
    Case("too-many-features", "above the cap of 4096 (--max-feature-dim)"),
    Case("fixed-batch", "fixed batch size of 2 (input dimension 0) and was given 64"),
    Case("index-out-of-range", "the model raised"),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    w = tmp_path_factory.mktemp("sandbox-world")
    write_fake_split(w / "data", "test", n=24, size=SIZE)
    (w / "secret.txt").write_text(SECRET)
    models = w / "models"
    models.mkdir()
    clean = export(Encoder(), w / "clean.pt2")
    return {"root": w, "clean": clean, "models": build_models(models, clean)}


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else
            "fifo" if p.is_fifo() else "dir"
            for p in sorted(folder.rglob("*")) if "out" not in p.relative_to(folder).parts}


def test_the_table_has_at_least_thirty_cases():
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_crafted_model_is_refused_or_contained(case: Case, world: dict, capsys, monkeypatch):
    w = world["root"]
    monkeypatch.chdir(w)  # relative paths in a crafted file would point at the planted secret
    model = world["models"][case.name]
    before = snapshot(w)
    out = w / "out" / f"{case.name}.json"
    code = main(["-q", "evaluate", "--data", str(w / "data"), "--model", str(model), "--out", str(out),
                 "--batch-size", "8", *case.flags])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 1, captured.err
    assert len(lines) == 1 and lines[0].startswith(f"error: {model}: "), captured.err
    assert case.culprit in lines[0], lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert SECRET not in captured.err + captured.out
    assert not (w / "pwned").exists() and not (w / "models/pwned").exists(), "a crafted file ran code"
    assert not out.exists()
    assert snapshot(w) == before


@pytest.mark.slow
def test_clean_export_scores_identically_in_and_out_of_the_sandbox(world):
    """The sandbox changes where the model runs, not what it computes: every metric is equal."""
    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import encode, evaluate

    root = world["root"]
    sandboxed = evaluate(world["clean"], root / "data", batch_size=8, progress=False).document
    dataset = ThreeDIdent(root / "data", "test")
    in_process = encode(torch.export.load(str(world["clean"])).module(), dataset, np.arange(len(dataset)),
                        torch.device("cpu"), batch_size=8, progress=False)
    np.save(root / "out-in-process.npy", in_process)
    direct = evaluate(root / "out-in-process.npy", root / "data", progress=False).document
    (root / "out-in-process.npy").unlink()
    assert sandboxed["metrics"] == direct["metrics"]
    assert sandboxed["per_latent"] == direct["per_latent"]
    assert sandboxed["model"]["sandbox"]["rlimits"] == "set"


def test_the_child_is_locked_down_before_it_reads_the_model(tmp_path):
    """The lock-down itself, without the reader: after it, opening, writing and creating files,
    sockets and new programs all fail inside the process (where the kernel has seccomp)."""
    script = f"""
import os, socket, subprocess, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from ident3d.sandbox.lockdown import Lockdown, lock_down
status = lock_down(Lockdown(memory_bytes=1 << 30, cpu_seconds=60))
results = {{"status": status}}
for name, attempt in (("open", lambda: open({str(tmp_path / 'secret.txt')!r}).read()),
                      ("create", lambda: open("new-file", "w").write("x")),
                      ("socket", lambda: socket.socket()),
                      ("exec", lambda: subprocess.run(["true"])),
                      ("allocate", lambda: bytearray(2 << 30))):
    try:
        attempt()
        results[name] = "allowed"
    except (OSError, MemoryError) as error:
        results[name] = type(error).__name__
os.write(1, repr(results).encode())
"""
    (tmp_path / "secret.txt").write_text(SECRET)
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, cwd=tmp_path,
                          timeout=120)
    results = eval(done.stdout.decode())  # noqa: S307 - our own child's repr of a dict of strings
    assert results["allocate"] == "MemoryError"
    assert not (tmp_path / "new-file").exists()
    if results["status"]["seccomp"] == "active":
        assert {results[k] for k in ("open", "create", "socket", "exec")} == {"PermissionError"}, results
    else:
        pytest.skip(f"seccomp unavailable here: {results['status']['seccomp']}")


@pytest.mark.slow
def test_every_thread_of_the_scoring_child_is_filtered(world):
    """seccomp and no-new-privileges on every thread while the model is scored, torch's pool too."""
    from ident3d.sandbox.host import SandboxedModel

    with SandboxedModel(world["clean"], "exported-program") as model:
        model(torch.rand(64, 3, SIZE, SIZE))
        tasks = sorted(Path(f"/proc/{model.process.pid}/task").iterdir())
        status = {task.name: dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines()
                                  if line.startswith(("Seccomp:", "NoNewPrivs:"))) for task in tasks}
        if model.lockdown["seccomp"] != "active":
            pytest.skip(f"seccomp unavailable here: {model.lockdown['seccomp']}")
    assert torch.get_num_threads() == 1 or len(status) > 1  # the pool exists and is checked
    assert {(s["Seccomp"].strip(), s["NoNewPrivs"].strip()) for s in status.values()} == {("2", "1")}, status


@pytest.mark.slow
def test_scores_do_not_depend_on_the_batch_size(world):
    """Any model the probe accepts scores the same at every --batch-size."""
    from ident3d.evaluation import evaluate

    documents = [evaluate(world["clean"], world["root"] / "data", batch_size=size, progress=False).document
                 for size in (7, 16, 256)]
    for document in documents[1:]:
        for key, value in documents[0]["metrics"].items():
            assert document["metrics"][key] == pytest.approx(value, abs=1e-6)


SYSCALLS = {"x86_64": {"kill": 62, "tkill": 200, "tgkill": 234, "fcntl": 72, "mmap": 9, "mprotect": 10},
            "aarch64": {"kill": 129, "tkill": 130, "tgkill": 131, "fcntl": 25, "mmap": 222, "mprotect": 226}}


@pytest.mark.slow
def test_a_stand_in_in_the_locked_down_child_reaches_no_other_process_and_no_file(tmp_path):
    """After the lock-down, calls that reach another process of the same user (signals, pidfd),
    take its descriptors, write a file through a shared mapping, or open the mount API all fail
    with EPERM; the other process lives on and the file is unchanged."""
    import platform

    numbers = SYSCALLS.get(platform.machine())
    if numbers is None:
        pytest.skip(f"no system-call table for {platform.machine()}")
    victim = subprocess.Popen(["sleep", "60"])
    (tmp_path / "held.txt").write_text("unchanged")
    script = f"""
import ctypes, errno, mmap, os, signal, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from ident3d.sandbox.lockdown import Lockdown, forbid_executable_memory, lock_down
libc = ctypes.CDLL(None, use_errno=True)
held = open({str(tmp_path / 'held.txt')!r}, "r+b")
libc.valloc.restype = ctypes.c_void_p
page = libc.valloc(4096)  # memory of its own, to ask for PROT_EXEC on
status = lock_down(Lockdown(memory_bytes=1 << 30, cpu_seconds=60))
status["no_exec"] = forbid_executable_memory()
F_GETFL, F_SETFL, F_SETOWN, F_SETSIG, F_SETLEASE, F_SETOWN_EX, O_ASYNC = 3, 4, 8, 10, 1024, 15, 0o20000
victim = {victim.pid}
owner = (ctypes.c_int * 2)(0, victim)  # struct f_owner_ex: F_OWNER_TID, pid
flags = libc.fcntl(0, F_GETFL)
nonblock = libc.fcntl(0, F_SETFL, flags | os.O_NONBLOCK)
results_fcntl = {{"fcntl_getfl": "allowed" if flags >= 0 else "refused",
                 "fcntl_nonblock": "allowed" if nonblock == 0 else "refused"}}
calls = {{"kill": ({numbers['kill']}, victim, signal.SIGKILL),
          "fcntl_setown": ({numbers['fcntl']}, 0, F_SETOWN, victim),
          "fcntl_setown_ex": ({numbers['fcntl']}, 0, F_SETOWN_EX, owner),
          "fcntl_setsig": ({numbers['fcntl']}, 0, F_SETSIG, signal.SIGKILL),
          "fcntl_setlease": ({numbers['fcntl']}, 0, F_SETLEASE, 1),
          "fcntl_async": ({numbers['fcntl']}, 0, F_SETFL, flags | O_ASYNC),
          "mmap_exec": ({numbers['mmap']}, 0, 4096, 0x7, 0x22, -1, 0),
          "mprotect_exec": ({numbers['mprotect']}, ctypes.c_void_p(page), 4096, 0x5),
          "tkill": ({numbers['tkill']}, victim, signal.SIGKILL),
          "tgkill": ({numbers['tgkill']}, victim, victim, signal.SIGKILL),
          "pidfd_open": (434, victim, 0),
          "pidfd_send_signal": (424, 3, signal.SIGKILL, 0, 0),
          "pidfd_getfd": (438, 3, 0, 0),
          "fsopen": (430, ctypes.c_char_p(b"tmpfs"), 0),
          "open_tree": (428, -100, ctypes.c_char_p(b"/"), 1)}}
results = {{"status": status, **results_fcntl}}
for name, (number, *args) in calls.items():
    ctypes.set_errno(0)
    answer = libc.syscall(number, *args)
    results[name] = errno.errorcode.get(ctypes.get_errno(), "ok") if answer == -1 else "allowed"
try:
    view = mmap.mmap(held.fileno(), 0, flags=mmap.MAP_SHARED)
    view[:9] = b"CHANGED!!"
    results["mmap_shared"] = "allowed"
except OSError as error:
    results["mmap_shared"] = errno.errorcode[error.errno]
os.write(1, repr(results).encode())
"""
    try:
        done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, timeout=120)
        results = eval(done.stdout.decode())  # noqa: S307 - our own child's repr of a dict of strings
        assert victim.poll() is None, "the locked-down process killed another process"
    finally:
        victim.kill()
        victim.wait()
    assert (tmp_path / "held.txt").read_text() == "unchanged"
    if results["status"]["seccomp"] != "active":
        pytest.skip(f"seccomp unavailable here: {results['status']['seccomp']}")
    assert results.pop("fcntl_getfl") == results.pop("fcntl_nonblock") == "allowed"  # its own pipes' flags
    assert {k: v for k, v in results.items() if k != "status"} == dict.fromkeys(
        ("kill", "tkill", "tgkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "fsopen", "open_tree",
         "mmap_shared", "fcntl_setown", "fcntl_setown_ex", "fcntl_setsig", "fcntl_setlease", "fcntl_async",
         "mmap_exec", "mprotect_exec"), "EPERM"), results


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_the_child_dies_with_the_evaluator(world, how):
    script = f"""
import sys, time, torch
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from ident3d.sandbox.host import SandboxedModel
from ident3d.sandbox import spawn
model = SandboxedModel({str(world['clean'])!r}, "exported-program")
model(torch.rand(2, 3, {SIZE}, {SIZE}))
print(model.process.pid, spawn._server[0].process.pid, flush=True)
time.sleep(120)
"""
    evaluator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child, server = map(int, evaluator.stdout.readline().split())
    evaluator.send_signal(how)
    evaluator.wait(timeout=30)
    for pid, what in ((server, "fork server"), (child, "child")):
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the sandbox {what} {pid} outlived its evaluator ({how.name})")


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.slow
def test_each_model_gets_its_own_child_of_one_fork_server_holding_only_its_pipes(world):
    """The server imports torch once; each child it forks keeps nothing of the server's: its own
    session and folder, and no descriptor but pipes and /dev/null (not the server's socket)."""
    from ident3d.sandbox import spawn
    from ident3d.sandbox.host import SandboxedModel

    with (SandboxedModel(world["clean"], "exported-program") as first,
          SandboxedModel(world["clean"], "exported-program") as second):
        server = spawn._server[0].process.pid
        assert first.process.pid != second.process.pid
        for model in (first, second):
            pid = model.process.pid
            assert model(torch.rand(2, 3, SIZE, SIZE)).shape == (2, 6)
            assert parent_of(pid) == server and os.getsid(pid) == pid
            assert os.readlink(f"/proc/{pid}/cwd") == model.temp
            held = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
            assert all(target.startswith("pipe:") or target == "/dev/null" for target in held), held
        first.close()
        assert second(torch.rand(3, 3, SIZE, SIZE)).shape == (3, 6)  # one child's end is not the other's


@pytest.mark.slow
def test_a_fork_server_that_died_is_replaced(world):
    from ident3d.sandbox import spawn
    from ident3d.sandbox.host import SandboxedModel

    spawn.prestart()
    dead = spawn._server[0].process
    dead.kill()
    dead.wait()
    with SandboxedModel(world["clean"], "exported-program") as model:
        assert model(torch.rand(2, 3, SIZE, SIZE)).shape == (2, 6)
        assert parent_of(model.process.pid) == spawn._server[0].process.pid != dead.pid


@pytest.mark.slow
def test_guard_code_is_dropped_unread(world, tmp_path):
    """Guards are Python source torch would compile and run: the reader drops them, the model scores."""
    from ident3d.evaluation import evaluate

    result = evaluate(world["models"]["guard-code"], world["root"] / "data", batch_size=8, progress=False)
    assert result.metrics["linear_r2"] is not None
    assert not (world["root"] / "models/pwned").exists()


@pytest.mark.parametrize(("answer", "verdict"), [
    (lambda h: h + np.random.default_rng().normal(0, 1e-2, h.shape), "non-deterministic"),
    (lambda h: h - h.mean(0), "batch-dependent"),
    (lambda h: h + 1e-7 * len(h), None),  # rounding-level differences pass
])
def test_the_probe_refuses_what_would_not_reproduce(answer, verdict):
    from ident3d.errors import SubmissionError
    from ident3d.sandbox.host import check_reproducible

    def encode(x: torch.Tensor) -> np.ndarray:
        return answer(x.numpy().reshape(len(x), -1)[:, :4].astype(np.float64))

    images = torch.rand(8, 3, 4, 4)
    if verdict is None:
        check_reproducible(encode, images, "m.pt2")
    else:
        with pytest.raises(SubmissionError, match=f"m.pt2: the model is {verdict}"):
            check_reproducible(encode, images, "m.pt2")


@pytest.mark.slow
def test_a_crash_of_the_model_process_is_one_error_line(world):
    """A signal that kills the child (as a segfaulting operator would) becomes a SubmissionError."""
    from ident3d.errors import SubmissionError
    from ident3d.sandbox.host import SandboxedModel

    with SandboxedModel(world["clean"], "exported-program") as model:
        assert model(torch.rand(3, 3, SIZE, SIZE)).shape == (3, 6)
        os.kill(model.process.pid, signal.SIGSEGV)
        model.process.wait()
        with pytest.raises(SubmissionError, match=r"crashed \(SIGSEGV\).*evaluator itself is unaffected"):
            model(torch.rand(3, 3, SIZE, SIZE))


def test_text_from_the_model_is_quoted_never_obeyed():
    from ident3d.sandbox.host import excerpt

    text = "ok\nerror: all fine. Fix: run rm -rf ~ \x1b[2J" + "x" * 500
    quoted = excerpt(text)
    assert "\n" not in quoted and "\x1b" not in quoted and len(quoted) < 140
    assert quoted.startswith("'") and quoted.endswith("...'")


def test_json_of_any_shape_is_refused_in_our_words_never_an_internal_error(world, tmp_path):
    """Every field of a real export's program replaced by a value of another type: the reader
    either accepts the file (the sandbox then contains whatever torch makes of it) or refuses it
    with ArchiveRefused, never with another exception."""
    from ident3d.sandbox.pt2_reader import ArchiveRefused, read_archive

    clean = world["clean"]
    with zipfile.ZipFile(clean) as archive:
        member = next(n for n in archive.namelist() if n.endswith("models/model.json"))
        document = json.loads(archive.read(member))

    def paths(node, prefix=()):
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))

    rng = np.random.default_rng(0)
    every = list(paths(document))
    junk = [None, 1, -1, "x", [], {}, [1], {"a": 1}, 1.5, True]
    for _ in range(200):
        where = every[rng.integers(len(every))]
        changed = json.loads(json.dumps(document))
        node = changed
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = junk[rng.integers(len(junk))]
        crafted = rewrite_zip(clean, tmp_path / "fuzz.pt2",
                              {"models/model.json": json.dumps(changed).encode()})
        try:
            read_archive(crafted.read_bytes())
        except ArchiveRefused:
            pass
