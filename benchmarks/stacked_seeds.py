"""What training several seeds as one stacked model saves on this machine (``ident3d synthetic run
--seeds``, ``ident3d.baselines.seed_stack``), against the same seeds run one after another.

    python -m benchmarks.stacked_seeds [--row T2.2] [--seeds 3] [--batch-size 256] [--device cpu]

Each configuration runs the package's own ``run_seeds`` twice, for a short and a long budget, and
takes the difference: seconds per training step of all the seeds together, without the set-up (the
mixing's condition pool, the held-out sample) and the scoring that both budgets share. Prints one
line per batch size with the stacked and the one-by-one seconds per step and their ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ident3d.baselines.synthetic.budget import Budget
from ident3d.baselines.synthetic.run import run_seeds
from ident3d.baselines.synthetic.table import get_row

SHORT, LONG = 10, 110  # steps: the difference is LONG - SHORT steps of training alone


def seconds_per_step(row_id: str, seeds: list[int], batch: int, stacked: bool, device: str) -> float:
    """Wall seconds of one training step of all ``seeds``, stacked or one by one."""
    spent = {}
    for steps in (SHORT, LONG):
        budget = Budget(steps=steps, batch_size=batch, eval_every=steps)
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            for group in [seeds] if stacked else [[seed] for seed in seeds]:
                run_seeds(get_row(row_id), group, budget, Path(out), progress=False, device=device)
            spent[steps] = time.perf_counter() - start
    return (spent[LONG] - spent[SHORT]) / (LONG - SHORT)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", default="T2.2")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, action="append", help="default: 256 and 1,000")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    seeds = list(range(args.seeds))
    print(f"row {args.row}, {args.seeds} seeds, device {args.device}, steps {LONG} minus {SHORT}")
    print("batch | s/step stacked | s/step one by one | one by one / stacked")
    for batch in args.batch_size or [256, 1000]:
        stacked = seconds_per_step(args.row, seeds, batch, True, args.device)
        alone = seconds_per_step(args.row, seeds, batch, False, args.device)
        print(f"{batch:,} | {stacked:.4f} | {alone:.4f} | {alone / stacked:.2f}x")


if __name__ == "__main__":
    main()
