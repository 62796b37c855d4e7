"""What one training step of the synthetic experiments costs on this machine, by batch size, and
what the plan's budgets cost in full.

    python -m benchmarks.synthetic_step     (from the repository root)

Times the step of ``ident3d.baselines.synthetic.run`` (draw pairs, mix, encode, the Lp loss with the
cl-ica denominator, Adam) for row T2.3 (box, Normal positives, L2), median of 5 steps after one
warm-up, with torch's default threads, and the same loss written as the broadcast difference tensor
it replaced, for the ratio. Then, for each exponent the tables use (L1, L2, L3) at the faithful CPU
batch, the step as ``LpInfoNCE`` takes it beside ``torch.cdist`` for every p and the broadcast form:
cdist is quick for p = 1 and 2 and slow for p = 3 (the rows with an L3 loss), which ``LpInfoNCE``
therefore computes with ``lp_power_distances``. Then each budget of baselines/synthetic/plan.toml
that matters here (the table's, the faithful CPU one, the paper's) as hours per run on this machine,
measured per step, and for the paper's budget a GPU projection from its floating-point operations:
labelled a projection, since no GPU was measured here. Last, what drawing one batch of the paper's
size costs with each sampler: numpy (the CPU runs') and torch (the GPU runs', timed here on the CPU).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ident3d.baselines.losses import LpInfoNCE
from ident3d.baselines.models import MLPEncoder
from ident3d.baselines.synthetic import device_sampling
from ident3d.baselines.synthetic.processes import invertible_mlp
from ident3d.baselines.synthetic.table import get_row

BATCHES = (256, 1000, 6144)


class BroadcastLp(LpInfoNCE):
    """The similarity as the (B, B, d) difference tensor (the form before ``torch.cdist``)."""

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return -(a[:, None, :] - b[None, :, :]).abs().pow(self.p).sum(-1) / self.tau


class CdistLp(LpInfoNCE):
    """The similarity through ``torch.cdist`` for every p (LpInfoNCE's form before p = 3 left it)."""

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return -torch.cdist(a, b, p=self.p).pow(self.p) / self.tau


def step_seconds(loss: torch.nn.Module, batch: int, steps: int = 5) -> float:
    row = get_row("T2.3")
    torch.manual_seed(0)
    mixing, encoder = invertible_mlp(10, 3, 0), MLPEncoder(10, row.model.space)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    times = []
    for step in range(steps + 1):
        start = time.perf_counter()
        z, z_pos = row.process.pairs(np.random.default_rng([0, step]), batch)
        h = encoder(mixing(torch.from_numpy(np.concatenate([z, z_pos])).float()))
        value = loss(h[:batch], h[batch:])
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times[1:]))


ENCODER_PARAMETERS = 852_000  # the 10-100-500-500-500-500-100-10 MLP (REFERENCE section 12)
GPU_FLOPS = 20e12  # a data-centre GPU's sustained fp32 rate assumed for the projection (A100: 19.5e12)


def flops_per_step(batch: int, dim: int = 10) -> float:
    """Forward and backward (3x forward) of the encoder on 2B inputs, plus the loss's B x B distances
    (forward and backward) of ``dim`` features: the multiply-adds counted twice."""
    encoder = 3 * 2 * ENCODER_PARAMETERS * 2 * batch
    distances = 3 * 3 * batch * batch * dim
    return float(encoder + distances)


def draw_seconds(row_id: str, batch: int, sampler: str, draws: int = 5) -> float:
    """Median seconds to draw one batch of pairs of ``row_id`` with numpy (the CPU runs' sampler) or
    torch (the GPU runs' sampler, here on the CPU)."""
    process, cpu, times = get_row(row_id).process, torch.device("cpu"), []
    for step in range(draws + 1):
        start = time.perf_counter()
        if sampler == "numpy":
            process.pairs(np.random.default_rng([0, step]), batch)
        else:
            device_sampling.pairs(process, device_sampling.step_generator(cpu, 0, step), batch)
        times.append(time.perf_counter() - start)
    return float(np.median(times[1:]))


def main() -> None:
    from ident3d.baselines.synthetic.sweep import load_plan

    print(f"torch threads: {torch.get_num_threads()}")
    print("batch | s/step (cdist) | s/step (broadcast) | ratio | steps per minute")
    measured = {}
    for batch in BATCHES:
        fast = step_seconds(LpInfoNCE(2, negatives="anchors"), batch)
        slow = step_seconds(BroadcastLp(2, negatives="anchors"), batch)
        measured[batch] = fast
        print(f"{batch} | {fast:.3f} | {slow:.3f} | {slow / fast:.1f}x | {60 / fast:,.0f}")
    print("\nexponent p at batch 1,000 | s/step (LpInfoNCE) | s/step (cdist) | s/step (broadcast) | "
          "cdist / LpInfoNCE")
    for p in (1, 2, 3):
        ours, cdist, broadcast = (step_seconds(form(p, negatives="anchors"), 1000)
                                  for form in (LpInfoNCE, CdistLp, BroadcastLp))
        print(f"{p} | {ours:.3f} | {cdist:.3f} | {broadcast:.3f} | {cdist / ours:.2f}")
    print("\nbudget (plan.toml sweep) | batch x steps | hours per run here (measured s/step x steps) | "
          "GPU projection")
    for sweep in load_plan():
        if sweep.name not in ("table", "faithful-cpu", "paper-unsupervised", "paper-supervised"):
            continue
        b = sweep.budget
        per_step = measured.get(b.batch_size) or step_seconds(LpInfoNCE(2, negatives="anchors"), b.batch_size)
        gpu = (f"{flops_per_step(b.batch_size) * b.steps / GPU_FLOPS / 60:.1f} min at {GPU_FLOPS / 1e12:.0f} "
               "TFLOP/s (a projection from FLOPs, not measured)" if sweep.name.startswith("paper") else "")
        print(f"{sweep.name} | {b.batch_size:,} x {b.steps:,} | {per_step * b.steps / 3600:.1f} | {gpu}")
    print(f"\ndrawing one batch of {BATCHES[-1]:,} pairs | numpy s | torch on this CPU s | numpy / torch "
          "(a GPU runs the torch sampler on the device; not measured here)")
    for row_id in ("T2.2", "T1.1", "A.1"):  # box GenNorm (inverse CDF), vMF, anisotropic normal
        numpy_s, torch_s = (draw_seconds(row_id, BATCHES[-1], s) for s in ("numpy", "torch"))
        print(f"{row_id} | {numpy_s:.4f} | {torch_s:.4f} | {numpy_s / torch_s:.1f}x")


if __name__ == "__main__":
    main()
