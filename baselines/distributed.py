"""One model trained by several processes (``torchrun``), equal to one process with the global batch.

    torchrun --nproc-per-node N -m ident3d train --preset normal-box --data DATA --out runs/x

Each process (rank) takes its slice of every step's global batch (``positives.StepBatches`` with a
shard; the items are the ones one process would draw), encodes it, and the features of all ranks are
gathered, with their gradients, so each rank computes the one-process loss over the whole batch:
InfoNCE's negatives are every image of the global batch, not of the rank's slice. Batch normalisation
takes its statistics over the global batch too (``GlobalBatchNorm2d``), so the forward pass is the
one-process one, and DistributedDataParallel averages the gradients, which the gathers have summed
over the ranks: the update is the one-process update. Rank 0 alone writes the run folder. GPUs use
NCCL, the CPU gloo (the tests run two CPU processes; no GPU was lent to this project).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_nn
from torch import nn

from ident3d.errors import TrainingError


@dataclass(frozen=True)
class Ranks:
    """This process's place among the processes that train one model."""

    rank: int
    world: int
    local: int  # the rank on this machine: its GPU under CUDA

    @property
    def writes(self) -> bool:
        """Whether this process writes the run folder (rank 0 only)."""
        return self.rank == 0


ALONE = Ranks(0, 1, 0)


def from_environment(device: torch.device, batch_size: int) -> Ranks:
    """The ranks torchrun's environment gives (WORLD_SIZE, RANK, LOCAL_RANK; one process alone
    without them), with the process group joined: NCCL on CUDA, gloo on the CPU."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return ALONE
    ranks = Ranks(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
    if batch_size % world:
        raise TrainingError(f"batch_size {batch_size} over {world} processes: each takes an equal slice of "
                            f"the global batch. Fix: choose a batch size divisible by {world}.")
    if not dist.is_initialized():
        if device.type == "cuda":  # NCCL's communicators live on the current device: this rank's own
            torch.cuda.set_device(ranks.local)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return ranks


def local_device(device: torch.device, ranks: Ranks) -> torch.device:
    """Each process's own GPU (its local rank) under CUDA; the CPU stays the CPU."""
    return torch.device("cuda", ranks.local) if device.type == "cuda" and ranks.world > 1 else device


def gather(local: torch.Tensor) -> torch.Tensor:
    """Every rank's rows, in rank order, with the gradient flowing back to each rank's own rows."""
    return torch.cat(dist_nn.all_gather(local))


def gather_features(h: torch.Tensor, anchors: int, pairs: bool) -> torch.Tensor:
    """The global batch's features from each rank's (anchors, then positives when ``pairs``): all
    anchors in rank order, then all positives, as one process would have encoded them."""
    if not pairs:
        return gather(h)
    return torch.cat([gather(h[:anchors]), gather(h[anchors:])])


class GlobalBatchNorm2d(nn.BatchNorm2d):
    """Batch normalisation over the global batch of all ranks while training (the sums of each rank
    all-reduced with their gradients), on any device, including the CPU where torch's SyncBatchNorm
    refuses; without a process group, or in eval mode, the plain layer. Running statistics follow the
    global batch, as one process's would. The statistics and the output are float32 whatever the
    input (bf16 under CUDA autocast), as autocast runs torch's own batch norm."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and dist.is_initialized()):
            return super().forward(x)
        x = x.float()
        channels, dims = x.shape[1], (0, 2, 3)
        count = torch.tensor([x.numel() / channels], dtype=x.dtype, device=x.device)
        total = dist_nn.all_reduce(torch.cat([x.sum(dims), count]))
        n = total[-1]
        mean = total[:channels] / n
        centred = x - mean.view(1, channels, 1, 1)
        var = dist_nn.all_reduce((centred * centred).sum(dims)) / n  # two passes, as one process computes it
        with torch.no_grad():
            self.num_batches_tracked += 1
            momentum = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
            self.running_mean.lerp_(mean.detach(), momentum)
            self.running_var.lerp_(var.detach() * n / (n - 1), momentum)  # unbiased, as BatchNorm2d keeps
        shape = (1, channels, 1, 1)
        scale = self.weight.view(shape) * torch.rsqrt(var.view(shape) + self.eps)
        return centred * scale + self.bias.view(shape)


def _swap_batchnorm(module: nn.Module, to: type[nn.BatchNorm2d]) -> nn.Module:
    """Every BatchNorm2d of ``module`` as class ``to``, in place: the same parameters and buffers."""
    for child in module.modules():
        if isinstance(child, nn.BatchNorm2d):
            child.__class__ = to
    return module


def global_batchnorm(module: nn.Module) -> nn.Module:
    return _swap_batchnorm(module, GlobalBatchNorm2d)


def plain_batchnorm(module: nn.Module) -> nn.Module:
    """Back to torch's BatchNorm2d (for the export, which must not depend on this module)."""
    return _swap_batchnorm(module, nn.BatchNorm2d)


def wrap(model: nn.Module, ranks: Ranks, device: torch.device) -> nn.Module:
    """The model as the training loop calls it: DistributedDataParallel over the ranks with global
    batch statistics, or the model itself alone."""
    if ranks.world == 1:
        return model
    global_batchnorm(model)
    ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids, broadcast_buffers=False)


def wait_for_all(ranks: Ranks) -> None:
    if ranks.world > 1:
        dist.barrier()


def finish(ranks: Ranks) -> None:
    if ranks.world > 1 and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
