"""The memorisation flag's false-alarm rate, measured outside its own calibration: A/A splits of images
the pixel read-out never saw, through the evaluator's whole gap path.

    python -m benchmarks.flag_level --data ROOT [--splits 200]     (from the repository root)

ROOT holds the CPU track's test and training splits (`ident3d render --track 3dident-v2-64`). The
pixel read-out (8 x 8 average pooling) has no training, so no image of the training split is one it
could have memorised, and no read-out is fitted on them. Each protocol scores the public test split as
the evaluator does (its read-outs, matching and feature transform); each split then draws two
disjoint random subsets of the training split's images, sized as the protocol's public held-out
rows and as a fresh draw, and puts them through ``ident3d.fresh.memorisation_gap`` and
``ident3d.fresh.judge``, the functions a verification calls. Every flag is a false alarm. It prints the
rate per protocol with its exact 95% interval, beside the test's level.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

from ident3d import fresh, gap_test
from ident3d.baselines.flag_calibration import clopper_pearson
from ident3d.baselines.pixels import export_pixel_readout
from ident3d.datasets import ThreeDIdent
from ident3d.evaluation import encode, features, score_features
from ident3d.protocols import REGISTRY
from ident3d.submissions import load_submission
from ident3d.tracks import get_track

TRACK = "3dident-v2-64"
POOL = 6000  # training images encoded: enough for the larger held-out set plus a draw


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="root with the CPU track's test and train splits")
    parser.add_argument("--splits", type=int, default=200, help="A/A splits per protocol (default 200)")
    args = parser.parse_args(argv)
    public, train = ThreeDIdent(args.data, "test"), ThreeDIdent(args.data, "train")
    n_fresh = get_track(TRACK).fresh_images
    rng = np.random.default_rng(2026)
    pool = np.sort(rng.choice(len(train), size=POOL, replace=False))
    with tempfile.TemporaryDirectory() as scratch:
        model = export_pixel_readout(Path(scratch) / "pixels.pt2", public.resolution)
        sub = load_submission(model)
        try:
            h_public = features(sub, public, torch.device("cpu"), 256, False)
            h_pool = encode(sub.model, train, pool, torch.device("cpu"), 256, False)
        finally:
            sub.close()
    columns = public.variant_spec.continuous_columns
    z_pool = train.latents[pool][:, columns].astype(np.float64)
    print(f"A/A: the pixel read-out, {args.splits} splits of {POOL:,} training images per protocol; "
          f"test level {100 * gap_test.LEVEL:g}%")
    for name, protocol in REGISTRY.items():
        scored = score_features(str(model), public, h_public, {}, {}, protocol, False)
        h = scored.standardise(h_pool, "the pixel read-out")
        n_public, flags = len(scored.held_out[0]), 0
        for k in range(args.splits):
            order = rng.permutation(POOL)
            a, b = order[:n_public], order[n_public:n_public + n_fresh]
            gap = fresh.memorisation_gap(scored.readout, (z_pool[a], h[a]), (z_pool[b], h[b]), seed=k,
                                         draws=50)  # the bootstrap describes the gap; the test flags
            flags += fresh.judge([gap])
        low, high = clopper_pearson(flags, args.splits)
        print(f"{name}: {flags}/{args.splits} flagged = {100 * flags / args.splits:.1f}% [{100 * low:.1f}, "
              f"{100 * high:.1f}] ({n_public:,} public-sized / {n_fresh:,} draw-sized rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
