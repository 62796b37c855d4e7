"""What one training step of the synthetic experiments costs on this machine, by batch size.

    python -m benchmarks.synthetic_step     (from the repository root)

Times the step of ``ident3d.baselines.synthetic.run`` (draw pairs, mix, encode, the Lp loss with the cl-ica
denominator, Adam) for row T2.3 (box, Normal positives, L2), median of 5 steps after one warm-up, with torch's default threads,
and the same loss written as the broadcast difference tensor it replaced, for the ratio.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ident3d.baselines.losses import LpInfoNCE
from ident3d.baselines.models import MLPEncoder
from ident3d.baselines.synthetic.processes import invertible_mlp
from ident3d.baselines.synthetic.table import get_row

BATCHES = (256, 1024, 6144)


class BroadcastLp(LpInfoNCE):
    """The similarity as the (B, B, d) difference tensor (the form before ``torch.cdist``)."""

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return -(a[:, None, :] - b[None, :, :]).abs().pow(self.p).sum(-1) / self.tau


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


def main() -> None:
    print(f"torch threads: {torch.get_num_threads()}")
    print("batch | s/step (cdist) | s/step (broadcast) | ratio | steps per minute")
    for batch in BATCHES:
        fast = step_seconds(LpInfoNCE(2, negatives="anchors"), batch)
        slow = step_seconds(BroadcastLp(2, negatives="anchors"), batch)
        print(f"{batch} | {fast:.3f} | {slow:.3f} | {slow / fast:.1f}x | {60 / fast:,.0f}")


if __name__ == "__main__":
    main()
