"""The training loop: one config, one run folder, exact resume, a scored encoder at the end.

A run folder holds

    config.json              the TrainConfig of the run (written at start)
    log.jsonl                one JSON object per log step: loss, images/s, data wait; and scores
    checkpoint.safetensors   encoder + loss parameters + Adam state; step and config in metadata
    encoder.pt2              torch.export program: images in [0, 1] -> features (the submission)
    encoder.safetensors      the same weights for ``--arch resnet18-contrastive``
    result.json              the standard evaluator's score on the eval split

Every batch is a pure function of (seed, step) (``baselines.positives``) and the model's random
init is seeded, so a run resumed from a checkpoint continues exactly where it stopped.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import shutil
import time
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch.utils.data import DataLoader
from tqdm import tqdm

from ident3d import atomic, metrics
from ident3d.baselines import distributed
from ident3d.baselines.checkpoints import (
    checkpoint_metadata,
    load_checkpoint,
    model_tensors,
    readable_checkpoint,
    save_checkpoint,
)
from ident3d.baselines.config import TrainConfig, from_json, resume_differences
from ident3d.baselines.losses import build_loss
from ident3d.baselines.models import ARCH, Encoder
from ident3d.baselines.positives import AnchorBatch, StepBatches, collate_batch, pair_source
from ident3d.datasets import ThreeDIdent
from ident3d.devices import resolve_device
from ident3d.errors import TrainingError
from ident3d.evaluation import encode, evaluate
from ident3d.layout import SplitLayout
from ident3d.pairs import PairBatch, PairDataset, PairLoader
from ident3d.readers import read_json

log = logging.getLogger(__name__)

# Training images per second on 2 CPU cores at 224 px with the paper's ResNet18 stem: about 4 s per
# step of 64 images on this project's machine (docs/cpu-track.md, "On a GPU"; `python -m
# benchmarks.train_throughput --size 224` measures it again). The cost note scales it by the pixel
# count for other sizes; beside other work a CPU runs slower, so the note is a lower bound.
CPU_IMAGES_PER_S_224 = 16.0
CPU_NOTE_SECONDS = 1800  # a CPU run expected to last longer than this is told so before it starts


def cpu_cost_note(config: TrainConfig, image_side: int, device: torch.device) -> str | None:
    """One sentence on what a CPU run of large images will cost and what to use instead, or None."""
    if device.type != "cpu" or image_side <= 64:
        return None
    per_step = config.batch_size * (1 if config.positives == "anchors" else 2)
    seconds = config.iterations * per_step / (CPU_IMAGES_PER_S_224 * (224 / image_side) ** 2)
    if seconds < CPU_NOTE_SECONDS:
        return None
    return (f"{config.iterations:,} steps of {per_step} images of {image_side} px on a CPU: about "
            f"{seconds / 3600:.1f} hours on 2 idle cores, more beside other work (about "
            f"{CPU_IMAGES_PER_S_224:.0f} images/s at 224 px). "
            "For minutes, train on 64 px data (ident3d render --preset preview ..., README quickstart 1); "
            "for this size, a GPU (--device cuda).")


def build_model(config: TrainConfig, mean: list[float], std: list[float]) -> Encoder:
    with torch.random.fork_rng(devices=[]):  # a seeded init without touching the caller's RNG
        torch.manual_seed(config.seed)
        return Encoder(config.latent_dim, config.space, mean, std, stem=config.stem)


def build_optimizer(config: TrainConfig, model: torch.nn.Module, loss: torch.nn.Module
                    ) -> torch.optim.Adam:
    groups = [{"params": list(model.parameters()), "lr": config.lr}]
    loss_parameters = list(loss.parameters())
    if loss_parameters:
        groups.append({"params": loss_parameters, "lr": config.loss_lr})
    return torch.optim.Adam(groups)


def lr_factor(config: TrainConfig, step: int) -> float:
    """The learning rates' multiplier for step ``step`` (0-based): 1 for ``constant``; for ``cosine``
    half a cosine from 1 at the first step to 0 after the last."""
    if config.lr_schedule == "constant":
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * step / config.iterations))


def set_learning_rates(config: TrainConfig, optimizer: torch.optim.Optimizer, step: int) -> None:
    """A pure function of the step, so a resumed run follows the unbroken run's schedule."""
    factor = lr_factor(config, step)
    for group, base in zip(optimizer.param_groups, (config.lr, config.loss_lr), strict=False):
        group["lr"] = base * factor


# ---- checkpoints: one safetensors file, the non-tensor state as JSON in its metadata ----

def saved_config(path: Path) -> TrainConfig:
    metadata = checkpoint_metadata(path)
    with readable_checkpoint(path):
        return from_json(json.loads(metadata["config"]))


def splits_identity(splits: list[tuple[str, ThreeDIdent | None]]) -> str:
    """The sha256 of the training and scoring splits' latents as the loader reads them (None: a split
    that is not there): what a run's data is, wherever it lies."""
    return " ".join(f"{name}:{'-' if split is None else atomic.sha256_array(split.latents)}"
                    for name, split in splits)


def moved_data(checkpoint: Path, identity: str) -> bool:
    """True when the checkpoint records the same splits as ``identity``, the data's where it lies
    now (a moved run or demo folder). Checkpoints written before the identity was recorded: False."""
    recorded = checkpoint_metadata(checkpoint).get("data_identity")
    return recorded is not None and recorded == identity


# ---- logs ----

def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def truncate_log(path: Path, step: int) -> None:
    """Keep only the records up to ``step`` (a resumed run rewrites what came after)."""
    kept = [r for r in read_log(path) if r["step"] <= step]
    atomic.write_bytes(path, "".join(json.dumps(r) + "\n" for r in kept).encode())


def quick_score(model: torch.nn.Module, dataset: ThreeDIdent, n: int, device: torch.device,
                kernel: bool = False) -> dict:
    """Linear R^2 (fit on one half, scored on the other) and Pearson MCC on n held-out images; with
    ``kernel`` the kernel R^2 per latent too (the evaluator's read-out, fitted on the same half)."""
    n = min(n, len(dataset))
    h = encode(model, dataset, np.arange(n), device, batch_size=256, progress=False).astype(np.float64)
    model.train()
    z = dataset.latents[:n].astype(np.float64)
    half = n // 2
    r2 = metrics.linear_r2(z[:half], h[:half], z[half:], h[half:])
    mcc, _ = metrics.mcc(z, h)
    score = {"linear_r2": float(np.mean(np.clip(r2, 0, 1))), "mcc": float(np.mean(mcc)),
             "linear_r2_per_latent": [round(float(v), 4) for v in r2]}
    if kernel:
        kernel_r2, _ = metrics.nonlinear_r2(z[:half], h[:half], z[half:], h[half:])
        score["kernel_r2_per_latent"] = [round(float(v), 4) for v in kernel_r2]
    return score


def start_from_trunk(model: Encoder, checkpoint: Path) -> None:
    """Copy another run's trunk and linear head (``init_from``) into a new ``model``; its output space
    keeps its own init. A checkpoint of another shape is one clear error."""
    trunk = ("backbone.", "head.")
    parts = model_tensors(checkpoint, trunk)
    own = {k: v for k, v in model.state_dict().items() if k.startswith(trunk)}
    if set(parts) != set(own) or any(parts[k].shape != v.shape for k, v in own.items()):
        raise TrainingError(f"init_from {checkpoint}: its trunk and head do not fit this model (another "
                            "latent_dim or stem). Fix: start from a run of the same latent_dim and stem.")
    model.load_state_dict(parts, strict=False)


# ---- export ----

def export_program(model: torch.nn.Module, pt2: Path, resolution: int) -> Path:
    """Write ``model`` (eval mode, CPU) as a ``.pt2`` for images of ``resolution`` px, any batch size."""
    example = torch.rand(2, 3, resolution, resolution)
    program = torch.export.export(model.to("cpu").eval(), (example,),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    buffer = io.BytesIO()  # torch.export.save wants a name ending in .pt2, or a buffer
    with warnings.catch_warnings():
        # torch warns when weights share storage with another layout (channels-last training); the
        # weights are on the CPU here, the case the warning says is fine
        warnings.filterwarnings("ignore", message="No complete tensor found in the group")
        torch.export.save(program, buffer)
    atomic.write_bytes(pt2, buffer.getvalue())
    return pt2


def export(model: Encoder, out: Path, resolution: int) -> tuple[Path, Path]:
    """Write encoder.pt2 (torch.export, dynamic batch) and encoder.safetensors (for --arch)."""
    model = model.to("cpu").eval()
    pt2 = export_program(model, out / "encoder.pt2", resolution)
    weights = out / "encoder.safetensors"
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    with atomic.atomic_path(weights, suffix=".safetensors") as tmp:
        save_file(state, str(tmp), metadata={"arch": ARCH, "config": json.dumps(model.config())})
    return pt2, weights


# ---- the loop ----

def training_batch(batch: PairBatch | AnchorBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """The images one step encodes (anchors, then their positives when the batch has them) and the
    anchors' latents."""
    if isinstance(batch, PairBatch):
        return batch.images(), batch.z  # the loader's one (pinned) buffer: no copy here
    return batch.x, batch.z


def _loader(config: TrainConfig, dataset: ThreeDIdent, start: int, device: torch.device,
            ranks: distributed.Ranks = distributed.ALONE) -> DataLoader | PairLoader:
    # on CUDA the loader hands over uint8 (a quarter of the bytes) and the GPU converts
    source = pair_source(config.positives, dataset, seed=config.seed, conditional=config.conditional,
                         scale=config.scale, index=config.index, uint8=device.type == "cuda")
    workers = config.workers
    if workers < 0:  # on CUDA the machine's cores, shared by the processes of a torchrun run on it
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        workers = min(8, max(1, ((os.cpu_count() or 2) - 1) // local)) if device.type == "cuda" else 0
    options = dict(batch_sampler=StepBatches(start, config.iterations, config.batch_size,
                                             shard=(ranks.rank, ranks.world)),
                   num_workers=workers, pin_memory=device.type == "cuda",
                   prefetch_factor=4 if workers else None)
    if isinstance(source, PairDataset):
        return PairLoader(source, **options)
    return DataLoader(source, collate_fn=collate_batch, **options)


def train(config: TrainConfig, out: str | Path, resume: bool = False, progress: bool = True,
          overwrite: bool = False, run_name: str | None = None) -> Path | None:
    """Train (or resume) a run in ``out``; returns the result file (or the checkpoint when there is
    no eval split to score on), or None in a torchrun process other than rank 0, which writes them.
    The result names the model ``"<preset> (<run_name>)"``, the run name being ``out``'s folder name
    unless given.

    A new run starts in a missing or empty folder; ``overwrite`` trains next to a non-empty one and
    replaces it only when the new run is complete."""
    out = Path(out)
    run_name = run_name or out.name
    device = resolve_device(config.device)
    ranks = distributed.from_environment(device, config.batch_size)  # torchrun's processes, or one
    device = distributed.local_device(device, ranks)
    if not resume and out.is_dir() and any(out.iterdir()):
        if ranks.world > 1:
            raise TrainingError(f"--out {out}: holds files; a run of several processes starts in an empty "
                                "folder or resumes one. Fix: choose another --out, or add --resume.")
        if not overwrite:
            held = sorted(p.name for p in out.iterdir())
            raise TrainingError(f"--out {out}: holds {len(held)} file(s) ({', '.join(held[:3])}); a new run "
                                "starts in an empty folder. Fix: add --resume to continue the run there, "
                                "choose another --out, or add --overwrite to replace the folder once the "
                                "new run is complete.")
        staging = out.with_name(f".{out.name}.new")
        shutil.rmtree(staging, ignore_errors=True)  # a replacement interrupted earlier
        made = train(config, staging, progress=progress, run_name=run_name)  # named for out, not staging
        atomic.replace_folder(staging, out)
        return out / made.relative_to(staging)
    checkpoint, log_path = out / "checkpoint.safetensors", out / "log.jsonl"
    train_set = ThreeDIdent(config.data, config.train_split)
    has_eval = SplitLayout(Path(config.data), config.eval_split).raw_latents.exists()
    eval_set = (train_set if config.eval_split == config.train_split else
                ThreeDIdent(config.data, config.eval_split) if has_eval else None)
    data_identity = splits_identity([(config.train_split, train_set), (config.eval_split, eval_set)])
    if resume and not checkpoint.exists() and (out / "config.json").exists():
        earlier = from_json(read_json(out / "config.json", TrainingError, "start a new --out"))
        diff = resume_differences(earlier, config)
        if diff:
            raise TrainingError(f"--resume {out}: the saved run used other settings ({'; '.join(diff)}). "
                                "Fix: repeat the original settings, or start a new --out.")
        log.warning("--resume %s: the run stopped before its first checkpoint, so it starts again from "
                    "step 0 (%d steps)", out, config.iterations)
    if resume and checkpoint.exists():
        saved = saved_config(checkpoint)
        diff = resume_differences(saved, config)
        if saved.data != config.data and moved_data(checkpoint, data_identity):
            log.info("the data moved from %s to %s (same splits); resuming there", saved.data, config.data)
            diff = [d for d in diff if not d.startswith("data:")]
        if diff:
            raise TrainingError(f"--resume {out}: the saved run used other settings ({'; '.join(diff)}). "
                                "Fix: repeat the original settings, or start a new --out.")
    distributed.wait_for_all(ranks)  # every process has checked the folder before rank 0 writes to it
    if ranks.writes:
        out.mkdir(parents=True, exist_ok=True)
        atomic.write_json(out / "processes.json", {"world_size": ranks.world,  # how it was trained, this time
                                                   "per_rank_batch": config.batch_size // ranks.world,
                                                   "global_batch": config.batch_size})
        atomic.write_json(out / "config.json", config.to_json())
        log.info("config %s", json.dumps(config.to_json(), sort_keys=True))
    note = None if resume and checkpoint.exists() else cpu_cost_note(config, train_set.image_shape[0], device)
    if note:  # once, before the first step of a new run
        log.warning(note)

    model = build_model(config, *train_set.channel_stats())
    criterion = build_loss(config.loss, dim=config.latent_dim, p=config.p, tau=config.tau,
                           include_self=config.include_self, negatives=config.negatives,
                           precision_map=config.precision_map)
    model.to(device)
    criterion.to(device)
    optimizer = build_optimizer(config, model, criterion)
    step = 0
    if config.init_from and not (resume and checkpoint.exists()):
        start_from_trunk(model, Path(config.init_from))
        log.info("trunk and head from %s", config.init_from)
    if resume and checkpoint.exists():
        step, _ = load_checkpoint(checkpoint, model, criterion, optimizer)
        if step >= config.iterations and (out / "result.json").exists():
            log.info("%s is complete (step %d); nothing to do", out, step)
            distributed.finish(ranks)
            return out / "result.json" if ranks.writes else None
        log.info("resumed %s at step %d", out, step)
    if ranks.writes:
        truncate_log(log_path, step)  # records after the checkpoint (or of a run killed before one) go
    # Channels-last on every device: 1.2x images/s on 2 CPU cores with losses equal to float
    # rounding (benchmarks.train_throughput --device cpu), and the fast layout for tensor cores.
    model.to(memory_format=torch.channels_last)
    trained = distributed.wrap(model, ranks, device)  # DistributedDataParallel under several processes
    forward = torch.compile(trained) if config.compile else trained
    cuda = device.type == "cuda"
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if cuda and config.amp else nullcontext()
    pairs = config.positives != "anchors"

    model.train()
    window_loss = torch.zeros((), device=device)
    window_start, waited, images, window_steps = time.perf_counter(), 0.0, 0, 0
    batches = iter(_loader(config, train_set, step, device, ranks))
    with tqdm(total=config.iterations, initial=step, unit="step", desc=f"train {config.preset}",
              disable=not (progress and ranks.writes)) as bar, \
            open(log_path if ranks.writes else os.devnull, "a") as log_file:
        while step < config.iterations:
            before = time.perf_counter()
            batch = next(batches)
            waited += time.perf_counter() - before
            x, z = training_batch(batch)
            z = z.to(device, non_blocking=True)
            x = x.to(device, non_blocking=True, memory_format=torch.channels_last)
            if x.dtype == torch.uint8:
                x = x.float().div_(255.0)
            with autocast:
                h = forward(x).float()
            if ranks.world > 1:  # the global batch's features, each rank's with its gradient
                h, z = distributed.gather_features(h, len(z), pairs), distributed.gather(z)
            b = len(z)
            loss = criterion(h[:b], h[b:] if pairs else None, z)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            set_learning_rates(config, optimizer, step)
            optimizer.step()
            window_loss += loss.detach()
            window_steps += 1
            images += len(x) * ranks.world
            step += 1
            bar.update(1)
            if step % config.log_every == 0 or step == config.iterations:  # the last window too
                elapsed = time.perf_counter() - window_start
                record = {"step": step, "loss": float(window_loss) / window_steps,
                          "images_per_s": images / elapsed, "data_wait": waited / elapsed}
                if hasattr(criterion, "precision"):  # AnInfoNCE's learned Lambda
                    record["precision"] = criterion.precision.detach().cpu().tolist()
                if (config.eval_every and eval_set is not None and step % config.eval_every == 0
                        and ranks.writes):
                    record["eval"] = quick_score(model, eval_set, config.eval_images, device,
                                                 kernel=config.eval_kernel)
                log_file.write(json.dumps(record) + "\n")
                log_file.flush()
                bar.set_postfix(loss=f"{record['loss']:.4f}", img_s=f"{record['images_per_s']:.0f}")
                window_loss.zero_()
                window_start, waited, images, window_steps = time.perf_counter(), 0.0, 0, 0
            if ranks.writes and (step % config.checkpoint_every == 0 or step == config.iterations):
                save_checkpoint(checkpoint, step, model, criterion, optimizer,
                                {"config": json.dumps(config.to_json()), "data_identity": data_identity})

    distributed.plain_batchnorm(model)
    distributed.finish(ranks)  # every step done: rank 0 exports and scores the model alone
    if not ranks.writes:
        return None  # rank 0 writes the export and the result
    resolution = train_set.image_shape[0]
    pt2, _ = export(model, out, resolution)
    if eval_set is None:
        log.warning("no %s split under %s: skipped the final evaluation", config.eval_split, config.data)
        return checkpoint
    result = evaluate(pt2, config.data, split=config.eval_split, name=f"{config.preset} ({run_name})",
                      device=str(device), progress=progress)
    result.save(out / "result.json")
    return out / "result.json"
