"""The evaluator's side of the sandbox: start the locked-down child, feed it images, bound it.

``SandboxedModel(path, kind)`` checks a ``.pt2`` with the reader first (a refused file never reaches
torch), starts ``ident3d.sandbox.child`` in an empty temporary folder with a minimal environment,
sends the file's bytes through a pipe, and then maps image batches to features. Every wait has a
deadline; a crash, a signal, a timeout, the memory limit or a broken message becomes one
``SubmissionError`` naming the model file and what it did. Text that comes from the model (an
exception message) is only ever quoted as a short escaped excerpt, never as our advice.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ident3d import atomic
from ident3d.errors import SubmissionError
from ident3d.sandbox import spawn, wire
from ident3d.sandbox.limits import SandboxLimits
from ident3d.sandbox.pt2_reader import ArchiveRefused, read_archive

GIB = 1 << 30
PROBE_IMAGES = 8
PROBE_TOLERANCE = 1e-4  # relative to each feature's largest magnitude over the probe images
FIX_EXPORT = ("Fix: export the plain model in eval mode again with torch.export.save "
              "(docs/submissions.md), or submit safetensors weights with --arch.")
FIX_RUN = ("Fix: the model must map any float32 batch (B, 3, H, W) at the dataset's resolution to "
           "features (B, d) on its own, the same way every time (docs/submissions.md).")


# torch.export's guard on a static input size; only the three numbers are taken from the model's text
FIXED_SIZE = re.compile(r"Expected input at \*args\[0\]\.shape\[([0-3])\] to be equal to (\d{1,9}), "
                        r"but got (\d{1,9})")
DIMENSIONS = ("batch size", "channel count", "height", "width")


def fixed_size(text: object) -> str | None:
    """The line for a model exported with a fixed input size, naming the dimension to make dynamic."""
    found = FIXED_SIZE.search(str(text)[:2000])
    if found is None:
        return None
    dim, exported, given = int(found[1]), found[2], found[3]
    line = (f"the model was exported with a fixed {DIMENSIONS[dim]} of {exported} (input dimension "
            f"{dim}) and was given {given}. Fix: export it with that dimension dynamic, e.g. "
            "dynamic_shapes=({0: torch.export.Dim.AUTO, 2: torch.export.Dim.AUTO, "
            "3: torch.export.Dim.AUTO},) as in the README")
    if dim < 2:
        return line
    return (f"{line}; a model that works at one size only (a Linear layer on the flattened pixels, "
            f"say) resizes or pools to it first inside forward (torch.nn.functional.interpolate(x, "
            f"size={exported}) or an AdaptiveAvgPool2d) and is exported again")


def excerpt(text: object, limit: int = 120) -> str:
    """Someone else's text, shortened and escaped so it cannot pose as our output."""
    clean = "".join(c if c.isprintable() and c.isascii() else "?" for c in str(text)[:limit])
    return repr(clean + ("..." if len(str(text)) > limit else ""))


class _WarmUp(torch.nn.Module):
    """The evaluator's own program, rebuilt and run by each sandbox before it locks down: the kinds
    of layers encoders use (convolution, normalisation, pooling, attention, activations)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(4)
        self.pool = torch.nn.MaxPool2d(2)
        self.layer_norm = torch.nn.LayerNorm(4)
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pool(torch.relu(self.norm(self.conv(x))))
        tokens = self.layer_norm(h.flatten(2).transpose(1, 2))
        tokens = torch.nn.functional.scaled_dot_product_attention(tokens, tokens, tokens)
        h = torch.nn.functional.gelu(self.linear(tokens.mean(1)))
        return torch.sigmoid(torch.nn.functional.normalize(h, dim=1))


@functools.cache
def warm_up_archive() -> bytes:
    """``_WarmUp`` exported (4 s) once per torch version and user: kept in the user's cache folder
    and in memory. The child reads it through the same strict reader as a submission."""
    cache = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ident3d"
             / f"sandbox-warm-up-torch-{torch.__version__}.pt2")
    try:
        return cache.read_bytes()
    except OSError:
        pass
    program = torch.export.export(_WarmUp().eval(), (torch.rand(2, 3, 16, 16),),
                                  dynamic_shapes=({0: torch.export.Dim.AUTO},))
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    try:
        atomic.write_bytes(cache, buffer.getvalue())
    except OSError:
        pass  # a read-only home: export again next time
    return buffer.getvalue()


def feature_scale(features: np.ndarray) -> np.ndarray:
    """Each feature's largest magnitude (never 0): what the probe's tolerance is relative to."""
    return np.abs(features).max(0) + 1e-6 * (np.abs(features).max() + 1e-30)


def feature_gap(first: np.ndarray, again: np.ndarray, scale: np.ndarray) -> float:
    """The largest difference between two encodings of the same images, relative to ``scale``."""
    if again.shape != first.shape:
        return math.inf
    return float((np.abs(again - first) / scale).max()) if again.size else 0.0


def refuse_unstable(source: object, n: int, how: str, gap: float) -> None:
    what = "non-deterministic" if how == "a second time" else "batch-dependent"
    raise SubmissionError(
        f"{source}: the model is {what}: the same {n} images encoded {how} give features that "
        f"differ by {gap:.2g} of their scale (tolerance {PROBE_TOLERANCE:g}), so its scores "
        "would not reproduce. Fix: no randomness and no statistics across the batch (export "
        "after model.eval()).")


def check_reproducible(encode: Callable[[torch.Tensor], np.ndarray], images: torch.Tensor,
                       source: object) -> None:
    """Same images twice, reordered, and in a smaller batch: the features must agree within
    ``PROBE_TOLERANCE`` of each feature's scale, or the scores would not reproduce (docs). A first,
    cheap check before scoring; ``ScoringProbe`` checks again at random points during scoring."""
    images = images[:PROBE_IMAGES]
    n = len(images)
    first = encode(images)
    if not np.isfinite(first).all():
        return  # the evaluator's feature check names the first non-finite value
    order = np.arange(n)[::-1].copy()
    runs = {"a second time": (np.arange(n), encode(images)),
            "in reverse order": (order, encode(images[torch.from_numpy(order)])),
            "in a smaller batch": (np.arange(max(1, n // 2)), encode(images[: max(1, n // 2)]))}
    scale = feature_scale(first)
    for how, (rows, again) in runs.items():
        gap = feature_gap(first[rows], again, scale)
        if not np.isfinite(gap) or gap > PROBE_TOLERANCE:
            refuse_unstable(source, n, how, gap)


class ScoringProbe:
    """Re-encodings during a scoring run: after ``PROBES - 1`` batches chosen at random and after the
    last one, a random subset of the images encoded so far, in random order and of a random size, is
    encoded again and must give the features it gave. The last probe's batch holds more than
    ``PROBE_IMAGES`` images (up to the larger of the scoring batch size and ``LARGE``), the others
    1 to the scoring batch size. The choices come from OS entropy when the run starts, so a model
    cannot tell a probe from a batch; a model whose features depend on the batch's size,
    composition or order, or on how often it was called, is refused, and any accepted model
    scores the same at every --batch-size."""

    PROBES = 3
    LARGE = 64

    def __init__(self, n_batches: int, batch_size: int, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng()
        self.batch_size, self.last = batch_size, n_batches - 1
        earlier = self.rng.choice(max(n_batches - 1, 0), size=min(self.PROBES - 1, max(n_batches - 1, 0)),
                                  replace=False)
        self.points = {*earlier.tolist(), self.last}

    def due(self, batch: int) -> bool:
        return batch in self.points

    def draw(self, batch: int, encoded: int) -> np.ndarray | None:
        """Row indices (into the features so far) to encode again, or None when too few exist.
        Never all of them, so a probe is never exactly the set of one earlier batch."""
        large = batch == self.last
        high = min(max(self.batch_size, self.LARGE) if large else self.batch_size, encoded - 1)
        low = min(PROBE_IMAGES + 1, high) if large else 1
        if high < 1:
            return None
        return self.rng.choice(encoded, size=int(self.rng.integers(low, high + 1)), replace=False)

    def check(self, source: object, features: np.ndarray, rows: np.ndarray, again: np.ndarray) -> None:
        if not np.isfinite(features).all():
            return  # the evaluator's feature check names the first non-finite value
        gap = feature_gap(features[rows], again, feature_scale(features))
        if not np.isfinite(gap) or gap > PROBE_TOLERANCE:
            refuse_unstable(source, len(rows), f"again after scoring began, in a batch of {len(rows)} "
                            "in random order,", gap)


class SandboxedModel:
    """``model(x)``: features (B, d) of a float32 batch, computed in a locked-down child process."""

    def __init__(self, path: Path, kind: str, arch: str | None = None, device: str = "cpu",
                 batch_size: int = 256, limits: SandboxLimits | None = None) -> None:
        self.path, self.kind, self.limits = Path(path), kind, limits or SandboxLimits()
        self.stage = "starting"
        self.in_flight, self.deadline = 0, 0.0  # the batch sent and not yet collected
        self.process: subprocess.Popen | None = None
        self.temp: str | None = None
        with self.path.open("rb") as f:
            data = f.read(self.limits.reader.max_file_bytes + 1)
        if len(data) > self.limits.reader.max_file_bytes:
            raise SubmissionError(f"{self.path}: more than {self.limits.reader.max_file_bytes} bytes, the "
                                  "cap for a model file. Fix: submit a smaller model, or a maintainer "
                                  "raises the cap (docs/submissions.md).")
        self.sha256 = hashlib.sha256(data).hexdigest()  # of the very bytes the child will run
        if kind == "exported-program":
            try:
                read_archive(data, self.limits.reader)  # refused files never reach torch
            except ArchiveRefused as error:
                self.close()
                fix = error.fix or ("ident3d reads .pt2 files as data and refuses anything that could "
                                    f"run code or read out of bounds. {FIX_EXPORT}")
                raise SubmissionError(f"{self.path}: {error}. {fix}") from None
        # the one batch shape the child runs (ident3d.sandbox.child.FixedShape): never smaller than
        # the probe's largest batch, so a model that changes above some batch size shows it
        settings = {"kind": kind, "arch": arch, "device": device,
                    "batch_size": max(batch_size, ScoringProbe.LARGE),
                    "memory_bytes": int(self.limits.memory_gib * GIB),
                    "cpu_seconds": int(self.limits.cpu_seconds), "max_model_bytes": len(data) + 1,
                    "max_batch_bytes": 8 * GIB, "reader": asdict(self.limits.reader),
                    "threads": torch.get_num_threads()}
        try:
            self.process, self.temp = spawn.take()
        except OSError as error:
            raise SubmissionError(f"{self.path}: the evaluator could not start its sandbox ({error}); the "
                                  "model was not run. Fix: run again with IDENT3D_SANDBOX_DEBUG=1 to see "
                                  "the sandbox's own error (docs/submissions.md).") from None
        self.stage = "loading the model"
        warm_up = wire.pack_settings(settings, warm_up_archive())  # built while the child imports torch
        deadline = time.monotonic() + self.limits.load_seconds
        self._send(wire.WARM_UP, warm_up, deadline, self.limits.load_seconds)
        self._send(wire.MODEL, data, deadline, self.limits.load_seconds)
        del data
        tag, payload = self._receive(1 << 16, deadline, self.limits.load_seconds)
        if tag != wire.READY:
            self._fail(tag, payload)
        try:
            info = json.loads(payload)
            self.parameters = int(info["parameters"])
            self.lockdown = {str(k)[:20]: str(v)[:120] for k, v in dict(info["lockdown"]).items()}
        except (ValueError, TypeError, KeyError):
            self._fail(b"?", b"")  # not what our child sends: treated as a broken sandbox

    # -- talking to the child -------------------------------------------------------------------
    def _send(self, tag: bytes, payload: bytes, deadline: float, seconds: float) -> None:
        try:
            wire.send(self.process.stdin.fileno(), tag, payload, deadline)
        except wire.WireError as error:
            self._died(str(error), seconds)

    def _receive(self, max_bytes: int, deadline: float, seconds: float) -> tuple[bytes, bytes]:
        try:
            return wire.receive(self.process.stdout.fileno(), max_bytes, deadline)
        except wire.WireError as error:
            self._died(str(error), seconds)

    def _died(self, why: str, seconds: float) -> None:
        """The pipe broke or timed out: say what happened to the process, then stop it."""
        if why == "timeout":
            self.close()
            flag = " (--time-limit)" if self.stage.startswith("encoding") else ""
            raise SubmissionError(f"{self.path}: the model took longer than {seconds:g} s while "
                                  f"{self.stage} and was stopped{flag}. {FIX_RUN}")
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            what = {"SIGXCPU": "used up its CPU-time limit", "SIGXFSZ": "tried to write a file",
                    "SIGSYS": "made a forbidden system call"}.get(name, f"crashed ({name})")
            raise SubmissionError(f"{self.path}: the sandboxed model process {what} while {self.stage}; "
                                  f"the evaluator itself is unaffected. {FIX_RUN}")
        raise SubmissionError(f"{self.path}: the sandboxed model process stopped while {self.stage} "
                              f"({why}, exit code {code}). {FIX_RUN}")

    def _fail(self, tag: bytes, payload: bytes) -> None:
        """The child reported a failure (or sent nonsense): one line in our words."""
        self.close()
        try:
            report = json.loads(payload) if tag == wire.FAILED else {}
        except ValueError:
            report = {}
        if not isinstance(report, dict):
            report = {}
        kind, kind_of = report.get("kind"), excerpt(report.get("type", "?"), 40)
        text = report.get("text", "")
        if tag != wire.FAILED:
            line = f"the sandbox answered with an unexpected message while {self.stage}"
        elif fixed_size(text) is not None and self.stage != "loading the model":
            raise SubmissionError(f"{self.path}: {fixed_size(text)}.")
        elif kind == "refused":
            line = f"refused while {self.stage}: {excerpt(text, 300)}"
        elif kind == "memory":
            line = (f"the model needed more than its memory limit of {self.limits.memory_gib:g} GiB while "
                    f"{self.stage} (--memory-limit)")
        elif self.stage == "loading the model":
            line = f"torch could not rebuild the model ({kind_of}; its text begins {excerpt(text)})"
        else:
            line = f"the model raised {kind_of} while {self.stage} (its own text begins {excerpt(text)})"
        raise SubmissionError(f"{self.path}: {line}. {FIX_EXPORT if 'load' in self.stage else FIX_RUN}")

    # -- the model interface ------------------------------------------------------------------
    def __call__(self, x: torch.Tensor) -> np.ndarray:
        self.submit(x)
        return self.collect()

    def submit(self, x: torch.Tensor) -> None:
        """Send a batch; ``collect()`` returns its features. Between the two the caller may prepare
        the next batch while the model computes (one batch in flight, so no pipe can fill up)."""
        if self.process is None:
            raise SubmissionError(f"{self.path}: the sandbox was already closed")
        batch = x.detach().to("cpu", torch.float32).numpy()
        self.stage = f"encoding a batch of {len(batch)} images of shape {tuple(batch.shape[1:])}"
        self.in_flight = len(batch)
        self.deadline = time.monotonic() + self.limits.batch_seconds
        self._send(wire.BATCH, wire.pack_array(batch), self.deadline, self.limits.batch_seconds)

    def collect(self) -> np.ndarray:
        cap = self.in_flight * self.limits.reader.max_feature_dim * 4 + 4096
        tag, payload = self._receive(cap, self.deadline, self.limits.batch_seconds)
        if tag != wire.FEATURES:
            self._fail(tag, payload)
        try:
            h = wire.unpack_array(payload, 2)
        except wire.WireError as error:
            self.close()
            raise SubmissionError(f"{self.path}: the sandbox sent malformed features ({error}). "
                                  f"{FIX_RUN}") from None
        if h.shape[0] != self.in_flight:
            self.close()
            raise SubmissionError(f"{self.path}: the model returned {h.shape[0]} rows for a batch of "
                                  f"{self.in_flight} images. {FIX_RUN}")
        return h

    def check_reproducible(self, images: torch.Tensor) -> None:
        try:
            check_reproducible(self, images, self.path)
        except SubmissionError:
            self.close()
            raise

    def close(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                try:
                    wire.send(process.stdin.fileno(), wire.QUIT, b"", time.monotonic() + 1)
                    process.wait(timeout=2)
                except (wire.WireError, subprocess.TimeoutExpired, OSError):
                    pass
            if process.poll() is None:
                process.kill()  # and its group (its own session)
                process.wait()
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        if self.temp is not None:
            shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> SandboxedModel:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        process = getattr(self, "process", None)
        if process is not None and process.poll() is None:
            process.kill()  # at interpreter exit: no goodbye message, just stop it
