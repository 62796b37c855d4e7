"""Train and score one row of the synthetic experiments for one seed; resumable, one result JSON.

A run's data are a pure function of (seed, step), its mixing MLP of the seed, its encoder's init of
the seed: a run stopped anywhere and resumed from its checkpoint gives the result of an unbroken run.
On the CPU numpy draws the pairs (``processes``); on a GPU torch draws them on the device
(``device_sampling``): the same distributions, different streams, so a run keeps its sampler.
Scores use a fixed held-out sample of the marginal per seed: linear R^2 fitted on 4,096 points and
scored on 4,096 others, MCC (Pearson, Hungarian matching) on the scored points, in percent.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ident3d import __version__, atomic, metrics
from ident3d.baselines.checkpoints import load_checkpoint, readable_checkpoint, save_checkpoint
from ident3d.baselines.losses import AnInfoNCE, build_loss
from ident3d.baselines.models import MLPEncoder
from ident3d.baselines.seed_stack import seed_models
from ident3d.baselines.synthetic import device_sampling
from ident3d.baselines.synthetic.budget import Budget
from ident3d.baselines.synthetic.processes import invertible_mlp
from ident3d.baselines.synthetic.table import COLUMNS, Row, get_row
from ident3d.devices import device_description, resolve_device
from ident3d.errors import TrainingError

log = logging.getLogger(__name__)

MIXING_LAYERS = 3  # main_mlp.py --n-mixing-layer default
EVAL_POINTS = 4096
EVAL_STREAM = 2**32 - 1  # second key of the held-out sample's random stream (steps use 0, 1, ...)
PERMUTATIONS = 10_000
SAMPLERS = ("numpy", "torch")  # numpy on the CPU (processes.py), torch on the device (device_sampling.py)
def result_name(row: Row, seed: int | str, budget: Budget, column: str = "unsupervised") -> str:
    """``T1.1-seed0-b256-n10000-lr0.001.json``; the other columns say so, and the identity read-out
    (nothing trained) has no budget: ``T1.1-identity-seed0.json``. (A stacked run's checkpoint names
    its seeds as ``seed`` "0-1-2".)"""
    kind = "" if column == "unsupervised" else f"-{column}"
    trained = "" if column == "identity" else f"-{budget.tag()}"
    return f"{row.run_id}{kind}-seed{seed}{trained}.json"


def held_out(row: Row, seed: int) -> tuple[np.ndarray, np.ndarray]:
    z = row.process.marginal_sample(np.random.default_rng([seed, EVAL_STREAM]), 2 * EVAL_POINTS)
    return z[:EVAL_POINTS], z[EVAL_POINTS:]


def score(features: np.ndarray, z_fit: np.ndarray, z_score: np.ndarray) -> dict[str, Any]:
    h_fit, h_score = features[:EVAL_POINTS], features[EVAL_POINTS:]
    r2 = metrics.linear_r2(z_fit, h_fit, z_score, h_score)
    mcc, assignment = metrics.mcc(z_score, h_score)
    return {"r2": 100 * float(metrics.clipped_mean(r2)), "mcc": 100 * float(mcc.mean()),
            "r2_per_latent": (100 * r2).round(3).tolist(), "assignment": assignment.tolist()}


def _features(encode: Callable[[torch.Tensor], torch.Tensor], mix: Callable[[torch.Tensor], torch.Tensor],
              z: list[np.ndarray], device: torch.device) -> list[np.ndarray]:
    """Each seed's features of its own points ``z[k]``, from the (stacked) mixing and encoder."""
    with torch.no_grad():
        h = encode(mix(torch.stack([torch.from_numpy(points).float() for points in z]).to(device)))
        return list(h.double().cpu().numpy())


def _pairs(row: Row, seed: int, step: int, n: int, sampler: str,
           device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Step ``step``'s latents and positives as float32 tensors on ``device``."""
    if sampler == "numpy":
        z, positive = (torch.from_numpy(a).float().to(device)
                       for a in row.process.pairs(np.random.default_rng([seed, step]), n))
        return z, positive
    z, positive = device_sampling.pairs(row.process, device_sampling.step_generator(device, seed, step), n)
    return z.float(), positive.float()


@contextmanager
def _numerics(precision: str, device: torch.device) -> Iterator[None]:
    """The arithmetic of one training step's forward pass and loss (``PRECISIONS``); TF32 is set for
    the step and put back after, so nothing else in the process changes."""
    if precision == "bf16":
        with torch.autocast(device.type, dtype=torch.bfloat16):
            yield
        return
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def precision_recovery(row: Row, learned: np.ndarray, assignment: list[int], seed: int) -> dict[str, Any]:
    """How well the learned Lambda of each latent's matched feature ranks like the true precisions."""
    truth = np.asarray(row.process.precisions)
    matched = learned[np.asarray(assignment)]
    return {"true": truth.tolist(), "learned_matched": matched.round(3).tolist()} | metrics.rank_agreement(
        truth, matched, seed=seed, permutations=PERMUTATIONS)


def run(row: Row, seed: int, budget: Budget, out: Path, progress: bool = True,
        column: str = "unsupervised", device: str | None = None, sampler: str | None = None) -> Path:
    """Train (or resume) ``column`` of row ``row`` with ``seed`` under ``budget`` on ``device`` (None:
    CUDA when present); write ``out/<name>.json``. A row that shares its runs with another
    (``same_run_as``) runs that row. ``sampler`` draws the pairs: numpy on the CPU and torch on the
    device by default (``torch`` on the CPU runs the GPU's code path)."""
    return run_seeds(row, [seed], budget, out, progress, column, device, sampler)[0]


@dataclass
class _Seed:
    """One seed's part of a run: its mixing, encoder, loss and held-out points, made in the order a
    single-seed run makes them (so a stacked seed starts where its own run would)."""

    seed: int
    path: Path
    mixing: nn.Module
    z_fit: np.ndarray
    z_score: np.ndarray
    encoder: nn.Module | None = None
    criterion: nn.Module | None = None

    @property
    def z_eval(self) -> np.ndarray:
        return np.concatenate([self.z_fit, self.z_score])


def _seed(row: Row, seed: int, path: Path, column: str, budget: Budget, dev: torch.device) -> _Seed:
    torch.manual_seed(seed)
    mixing = invertible_mlp(row.process.dim, MIXING_LAYERS, seed).to(dev)
    part = _Seed(seed, path, mixing, *held_out(row, seed))
    if column != "identity":
        m = row.model
        part.encoder = MLPEncoder(row.process.dim, m.space).to(dev)
        part.criterion = (None if column == "supervised" else
                          build_loss(m.loss, dim=row.process.dim, p=m.p, tau=m.tau, negatives=m.negatives,
                                     precision_map=budget.precision_map).to(dev))
    return part


def run_seeds(row: Row, seeds: list[int], budget: Budget, out: Path, progress: bool = True,
              column: str = "unsupervised", device: str | None = None, sampler: str | None = None
              ) -> list[Path]:
    """``run`` for each of ``seeds`` at once: their encoders (and losses) trained as one stacked model
    (``ident3d.baselines.seed_stack``), each seed with the pairs, mixing and initialisation of its
    own run, one result file per seed. A seed whose result exists is left out; one checkpoint holds
    the rest. Stacked seeds equal their single runs to float32 rounding per step (the kernels differ),
    so after many steps they are other draws of the same run, not the same numbers
    (tests/test_synthetic.py measures the difference)."""
    if column not in COLUMNS:
        raise TrainingError(f"column = {column!r}; expected one of {', '.join(COLUMNS)}")
    if not seeds or len(set(seeds)) != len(seeds):
        raise TrainingError(f"seeds = {seeds!r}; expected distinct seeds, at least one")
    dev = resolve_device(device)
    sampler = sampler or ("numpy" if dev.type == "cpu" else "torch")
    if sampler not in SAMPLERS:
        raise TrainingError(f"sampler = {sampler!r}; expected one of {', '.join(SAMPLERS)}")
    if budget.precision == "tf32" and dev.type != "cuda":
        raise TrainingError(f"precision tf32 on {dev}: TF32 is a mode of CUDA matmuls, nothing changes on "
                            "the CPU. Fix: run on a GPU, or use fp32 (or bf16).")
    row = get_row(row.run_id)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / result_name(row, seed, budget, column) for seed in seeds]
    for path in paths:
        if path.exists():
            log.info("%s exists; nothing to do", path)
    parts = [_seed(row, seed, path, column, budget, dev) for seed, path in zip(seeds, paths, strict=True)
             if not path.exists()]
    if column == "identity":
        for part in parts:
            [h] = _features(lambda x: x, seed_models([part.mixing])[1], [part.z_eval], dev)
            result = score(h, part.z_fit, part.z_score) | {"curve": []}
            _write(part.path, row, column, part.seed, budget, result, seconds=(0.0, 0.0), ran=(dev, "numpy"))
        return paths
    if parts:
        _train(row, parts, budget, out, progress, column, dev, sampler)
    return paths


def _train(row: Row, parts: list[_Seed], budget: Budget, out: Path, progress: bool, column: str,
           dev: torch.device, sampler: str) -> None:
    seeds = [part.seed for part in parts]
    stem = result_name(row, "-".join(map(str, seeds)), budget, column).removesuffix(".json")
    checkpoint = out / f".{stem}.checkpoint.safetensors"  # one seed: its own run's checkpoint name
    _, mix = seed_models([part.mixing for part in parts])
    encoder, encode = seed_models([part.encoder for part in parts])
    criteria = [part.criterion for part in parts]
    losses = (nn.Module() if criteria[0] is None else criteria[0] if len(parts) == 1
              else nn.ModuleList(criteria))  # what the checkpoint holds of the losses
    groups = [{"params": encoder.parameters()}]
    if list(losses.parameters()):
        groups.append({"params": losses.parameters(), "lr": budget.loss_lr})
    optimizer = torch.optim.Adam(groups, lr=budget.lr)
    step, curves, cpu, wall = 0, [[] for _ in parts], 0.0, 0.0
    if checkpoint.exists():
        step, metadata = load_checkpoint(checkpoint, encoder, losses, optimizer)
        with readable_checkpoint(checkpoint):
            curves = (json.loads(metadata["curves"]) if "curves" in metadata
                      else [json.loads(metadata["curve"])])  # a single-seed checkpoint of an earlier version
            cpu = float(metadata["cpu_seconds"])
            wall = float(metadata.get("wall_seconds", cpu))
        drew = metadata.get("sampler", "numpy")  # checkpoints before the torch sampler: numpy
        if drew != sampler:
            raise TrainingError(f"{checkpoint}: steps 1-{step} were drawn by the {drew} sampler, this run "
                                f"would draw the rest with {sampler}. Fix: resume on the device it began "
                                f"on ({'--device cpu' if drew == 'numpy' else '--device cuda'}), or delete "
                                "the checkpoint to start again.")
        log.info("resumed %s at step %d", checkpoint.name, step)
    started, wall_started = time.process_time(), time.perf_counter()
    n = budget.batch_size
    while step < budget.steps:
        drawn = [_pairs(row, seed, step, n, sampler, dev) for seed in seeds]
        z = torch.stack([anchors for anchors, _ in drawn])
        with _numerics(budget.precision, dev):
            h = encode(mix(torch.cat([z, torch.stack([positives for _, positives in drawn])], dim=1)))
            each = [F.mse_loss(h[k, :n].float(), z[k]) if criterion is None else criterion(h[k, :n], h[k, n:])
                    for k, criterion in enumerate(criteria)]
            loss = sum(each[1:], each[0])  # each seed's gradient is its own loss's
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        if step % budget.eval_every == 0 or step == budget.steps:
            features = _features(encode, mix, [part.z_eval for part in parts], dev)
            for part, h_k, loss_k, curve in zip(parts, features, each, curves, strict=True):
                point = score(h_k, part.z_fit, part.z_score)
                entry = {"step": step, "loss": float(loss_k.detach()), "r2": round(point["r2"], 3),
                         "mcc": round(point["mcc"], 3)}
                if isinstance(part.criterion, AnInfoNCE):
                    entry["precision"] = part.criterion.precision.detach().cpu().numpy().round(3).tolist()
                curve.append(entry)
                if progress:
                    log.info("%s seed %d step %d: R2 %.2f MCC %.2f", row.id, part.seed, step, point["r2"],
                             point["mcc"])
            elapsed = cpu + time.process_time() - started
            save_checkpoint(checkpoint, step, encoder, losses, optimizer,
                            {"curves": json.dumps(curves), "cpu_seconds": str(elapsed), "sampler": sampler,
                             "wall_seconds": str(wall + time.perf_counter() - wall_started)})
    cpu += time.process_time() - started
    wall += time.perf_counter() - wall_started
    features = _features(encode, mix, [part.z_eval for part in parts], dev)
    for part, h_k, curve in zip(parts, features, curves, strict=True):
        result = score(h_k, part.z_fit, part.z_score) | {"curve": curve}
        if isinstance(part.criterion, AnInfoNCE):
            learned = part.criterion.precision.detach().cpu().numpy().astype(np.float64)
            result["precision"] = (precision_recovery(row, learned, result["assignment"], part.seed)
                                   if learned.size == row.process.dim else {"learned": learned.tolist()})
        _write(part.path, row, column, part.seed, budget, result, (cpu, wall), (dev, sampler),
               stacked=seeds if len(seeds) > 1 else None)
    checkpoint.unlink(missing_ok=True)


def _write(path: Path, row: Row, column: str, seed: int, budget: Budget, result: dict[str, Any],
           seconds: tuple[float, float], ran: tuple[torch.device, str], stacked: list[int] | None = None
           ) -> Path:
    """The result file; ``seconds`` the CPU and wall seconds of training, ``ran`` the device and the
    sampler that drew the pairs; ``stacked`` the seeds trained with it as one model (``run_seeds``),
    whose seconds are the whole stack's."""
    record = {"row": row.id, "column": column, "title": row.title, "theory": row.theory, "seed": seed,
              "budget": budget.record(), "cpu_seconds": round(seconds[0], 1),
              "wall_seconds": round(seconds[1], 1), "torch_threads": torch.get_num_threads(),
              "device": str(ran[0]), "device_name": device_description(ran[0]), "sampler": ran[1],
              "torch": torch.__version__, "cuda": torch.version.cuda, "ident3d": __version__} | result
    if stacked:
        record["stacked_seeds"] = stacked
    atomic.write_json(path, record)
    return path
