"""The sandbox process, forked by the fork server (``ident3d.sandbox.forkserver``) into an empty
temporary folder with a minimal environment; its settings arrive with the evaluator's warm-up program.

Order matters: import and warm up torch, lock down (``ident3d.sandbox.lockdown``), and only then
read the model's bytes from the pipe. The model never learns a path: it gets image batches on
stdin and answers with features on stdout. Any failure is reported as a message (our wording, the
model's own text only as a short excerpt the parent escapes) and ends the process.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable
from typing import Any

from ident3d.sandbox import lockdown

PROTOCOL_FD = 1


class BadOutput(ValueError):
    """The model's output is not a (B, d) array of real numbers within the feature cap."""


class FixedShape:
    """``run(x)`` for any number of images, computed in batches of exactly ``size`` (a short one
    filled up by repeating its own images in turn, the copies' outputs dropped): the model only ever
    meets one shape, so every kernel it needs exists after its first call
    (``lockdown.forbid_executable_memory``). Repeating the batch, not one image, keeps its
    statistics, so a model that mixes the images of a batch is still caught by the probe."""

    def __init__(self, run: Callable[[Any], Any], size: int) -> None:
        self.run, self.size = run, size

    def __call__(self, x: Any) -> Any:
        import torch

        out = []
        for start in range(0, len(x), self.size):
            part = x[start:start + self.size]
            copies = -(-self.size // len(part))
            padded = part if len(part) == self.size else part.repeat(copies, 1, 1, 1)[:self.size]
            h = self.run(padded)
            if not isinstance(h, torch.Tensor) or h.dim() < 1 or len(h) != self.size:
                return h  # the caller names what is wrong with it
            out.append(h[:len(part)])
        return torch.cat(out) if len(out) > 1 else out[0]


def _warm_up(archive: bytes, device: str, arch: str | None) -> None:
    """Rebuild and run the evaluator's own tiny program through the path a submission takes, and
    import the registered architecture safetensors weights will be loaded into, so every module and
    kernel they need is loaded before the lock-down (nothing needs a file later)."""
    import encodings.cp437  # noqa: F401 - zipfile decodes member names without the UTF-8 flag with it

    import torch

    from ident3d.inference import Runner
    from ident3d.sandbox.effects import check_state_effects
    from ident3d.sandbox.loading import program_module
    from ident3d.sandbox.pt2_reader import read_archive

    program, module = program_module(read_archive(archive))
    check_state_effects(program, (2, 3, 16, 16))  # loads the fake-tensor machinery
    run = Runner(module, torch.device(device), 2)
    with torch.inference_mode():
        run(torch.rand(2, 3, 16, 16, device=device)).sum().item()
    if arch is not None:
        import safetensors.torch  # noqa: F401

        from ident3d.architectures import build

        try:
            build(arch, {})
        except Exception:  # noqa: BLE001 - an architecture may need its config; the import is what counts
            pass


def _report(fd: int, error: BaseException) -> None:
    from ident3d.sandbox import wire
    from ident3d.sandbox.effects import StateEffect
    from ident3d.sandbox.loading import LoadRefused
    from ident3d.sandbox.pt2_reader import ArchiveRefused

    ours = isinstance(error, ArchiveRefused | LoadRefused | BadOutput | StateEffect)
    text = str(error)
    memory = isinstance(error, MemoryError) or "can't allocate memory" in text or (
        "DefaultCPUAllocator" in text)
    kind = "refused" if ours else "memory" if memory else "raised"
    message = {"kind": kind, "type": type(error).__name__[:60],
               "text": text[:2000] if ours else text[:200]}
    try:
        wire.send(fd, wire.FAILED, json.dumps(message).encode())
    except wire.WireError:
        pass


def main() -> int:
    protocol = os.dup(PROTOCOL_FD)
    os.dup2(2, PROTOCOL_FD)  # stray prints go where stderr goes (nowhere), never into the protocol
    try:
        import torch
        import torch._export.serde.serialize  # noqa: F401 - the slow imports, before the settings arrive

        from ident3d.inference import Runner
        from ident3d.sandbox import wire
        from ident3d.sandbox.effects import StateSnapshot, check_state_effects
        from ident3d.sandbox.limits import Limits
        from ident3d.sandbox.loading import program_module, safetensors_module
        from ident3d.sandbox.pt2_reader import read_archive

        tag, payload = wire.receive(0, 1 << 24)
        if tag != wire.WARM_UP:
            return 2
        settings, archive = wire.unpack_settings(payload)
        if settings.get("threads"):
            torch.set_num_threads(settings["threads"])
        device = torch.device(settings["device"])
        _warm_up(archive, settings["device"], settings.get("arch"))
        status = lockdown.lock_down(lockdown.Lockdown(settings["memory_bytes"], settings["cpu_seconds"],
                                                      gpu=device.type == "cuda"))
        limits = Limits(**settings["reader"])
        tag, data = wire.receive(0, settings["max_model_bytes"])
        if tag != wire.MODEL:
            return 2
        if settings["kind"] == "exported-program":
            program, model = program_module(read_archive(data, limits))
        else:
            program, model = None, safetensors_module(data, settings.get("arch"), limits.max_parameters)
        del data
        parameters = sum(p.numel() for p in model.parameters())
        run = FixedShape(Runner(model, device, settings["batch_size"]), settings["batch_size"])
        state = StateSnapshot(model)  # after Runner moved it: the state as it runs
        exec_stage = device.type == "cpu" and status["seccomp"] == "active"
        status["no_exec"] = ("after a warm-up on zeros" if exec_stage else
                             "not applied (CUDA's driver maps code at run time)" if device.type == "cuda"
                             else status["seccomp"])
        wire.send(protocol, wire.READY, json.dumps({"parameters": parameters, "lockdown": status}).encode())
        while True:
            tag, payload = wire.receive(0, settings["max_batch_bytes"])
            if tag != wire.BATCH:
                return 0
            x = torch.from_numpy(wire.unpack_array(payload, 4).copy()).to(device)
            if program is not None:  # what the graph writes and returns, at the one shape it runs
                check_state_effects(program, (settings["batch_size"], *x.shape[1:]))
                program = None
            with torch.inference_mode():
                if exec_stage:  # kernels for the one shape exist now; no code is made after this
                    run(torch.zeros_like(x[:1]))
                    outcome = lockdown.forbid_executable_memory()
                    if outcome != "active":
                        raise lockdown.LockdownFailed(f"the executable-memory filter: {outcome}")
                    exec_stage = False
                h = run(x)
            state.check()
            if not isinstance(h, torch.Tensor) or h.dim() != 2 or len(h) != len(x):
                shape = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
                raise BadOutput(f"the model returned {shape} for a batch of {len(x)}, expected a "
                                f"tensor of shape ({len(x)}, d)")
            if not (h.is_floating_point() or h.dtype in (torch.int32, torch.int64, torch.uint8)):
                raise BadOutput(f"the model returned dtype {h.dtype}, expected real numbers")
            if h.shape[1] > limits.max_feature_dim:
                raise BadOutput(f"the model returns {h.shape[1]} features per image, above the cap of "
                                f"{limits.max_feature_dim} (--max-feature-dim); return a smaller "
                                "representation")
            wire.send(protocol, wire.FEATURES, wire.pack_array(h.detach().float().cpu().numpy()))
    except (KeyboardInterrupt, SystemExit):
        return 1
    except BaseException as error:  # noqa: BLE001 - every failure becomes one message to the parent
        if os.environ.get("IDENT3D_SANDBOX_DEBUG"):
            traceback.print_exc()
        _report(protocol, error)
        return 1
