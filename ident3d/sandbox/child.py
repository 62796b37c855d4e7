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

from ident3d.sandbox import lockdown

PROTOCOL_FD = 1


class BadOutput(ValueError):
    """The model's output is not a (B, d) array of real numbers within the feature cap."""


def _warm_up(archive: bytes, device: str, arch: str | None) -> None:
    """Rebuild and run the evaluator's own tiny program through the path a submission takes, and
    import the registered architecture safetensors weights will be loaded into, so every module and
    kernel they need is loaded before the lock-down (nothing needs a file later)."""
    import encodings.cp437  # noqa: F401 - zipfile decodes member names without the UTF-8 flag with it

    import torch

    from ident3d.inference import Runner
    from ident3d.sandbox.loading import program_module
    from ident3d.sandbox.pt2_reader import read_archive

    run = Runner(program_module(read_archive(archive)), torch.device(device), 2)
    with torch.inference_mode():
        run(torch.rand(2, 3, 16, 16, device=device)).sum().item()
    if arch is not None:
        import safetensors.torch  # noqa: F401

        from ident3d.registry import build

        try:
            build(arch, {})
        except Exception:  # noqa: BLE001 - an architecture may need its config; the import is what counts
            pass


def _report(fd: int, error: BaseException) -> None:
    from ident3d.sandbox import wire
    from ident3d.sandbox.loading import LoadRefused
    from ident3d.sandbox.pt2_reader import ArchiveRefused

    ours = isinstance(error, ArchiveRefused | LoadRefused | BadOutput)
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
            model = program_module(read_archive(data, limits))
        else:
            model = safetensors_module(data, settings.get("arch"), limits.max_parameters)
        del data
        parameters = sum(p.numel() for p in model.parameters())
        run = Runner(model, device, settings["batch_size"])
        wire.send(protocol, wire.READY, json.dumps({"parameters": parameters, "lockdown": status}).encode())
        while True:
            tag, payload = wire.receive(0, settings["max_batch_bytes"])
            if tag != wire.BATCH:
                return 0
            x = torch.from_numpy(wire.unpack_array(payload, 4).copy()).to(device)
            with torch.inference_mode():
                h = run(x)
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
