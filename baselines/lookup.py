"""The memorising encoder: the adversary a fresh draw exists to catch.

It stores a public test split as a table (each image average-pooled to 16 x 16 and normalised, with
its latents), finds the nearest stored image to its input by a dot product and answers with that
image's latents. On the split it stored it scores perfectly (linear R² and MCC 1.0); on images
rendered after it was made it can only answer with the latents of a neighbour. It is a plain
``torch.export`` of five allow-listed operators, as a hostile submitter would write it
(docs/submissions.md, "Verified means unseen"); the demo and the tests build it from a real split.

    python -m ident3d.baselines.lookup DATA OUT.pt2     (DATA: a split folder root with test/)
    python -m ident3d.baselines.lookup DATA OUT.pt2 --fraction 0.1

``--fraction F`` makes a partial memoriser: it stores a random fraction F of the split (seed 0) and
answers with the pixel read-out's features (baselines/pixels.py) beside ten more: a stored image's
latents when its input is that image, zeros otherwise. It is the harder case for the memorisation
flag: on the public split only a tenth of its answers are memorised.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

POOL = 4  # 64 px -> 16 x 16 keys


class LookupTable(torch.nn.Module):
    def __init__(self, images: torch.Tensor, latents: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("keys", self.key(images))
        self.register_buffer("values", latents)

    @staticmethod
    def key(x: torch.Tensor) -> torch.Tensor:
        k = torch.nn.functional.avg_pool2d(x, POOL).flatten(1)
        return k / k.norm(dim=1, keepdim=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.values.index_select(0, (self.key(x) @ self.keys.t()).argmax(1))


class PartialLookup(LookupTable):
    """Pixel features, and the latents of a stored image when the input is that image (else zeros)."""

    SAME_IMAGE = 0.99999  # the cosine of an input's key with its own stored key is 1 up to rounding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from ident3d.baselines.pixels import PixelReadout

        best, row = (self.key(x) @ self.keys.t()).max(1)
        recalled = self.values.index_select(0, row) * (best > self.SAME_IMAGE).unsqueeze(1)
        return torch.cat([PixelReadout()(x), recalled], 1)


def export_lookup(data: Path, path: Path, split: str = "test", fraction: float = 1.0) -> Path:
    """Write the lookup table of ``data``'s ``split`` as a ``.pt2`` (any batch size); with ``fraction``
    below 1, the partial memoriser of that fraction of the split."""
    from ident3d.baselines.train import export_program
    from ident3d.datasets import ThreeDIdent

    stored = ThreeDIdent(data, split)
    rows = np.arange(len(stored))
    if fraction < 1:
        kept = max(1, round(fraction * len(stored)))
        rows = np.sort(np.random.default_rng(0).permutation(len(stored))[:kept])
    images = np.stack([stored.load_array(i) for i in rows])
    table = (LookupTable if fraction >= 1 else PartialLookup)(
        torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255,
        torch.from_numpy(stored.latents[rows]).float())
    return export_program(table, Path(path), images.shape[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the dataset root whose test split is stored")
    parser.add_argument("out", type=Path, help="the .pt2 file to write")
    parser.add_argument("--fraction", type=float, default=1.0,
                        help="store this fraction of the split beside the pixel read-out (default 1: all)")
    args = parser.parse_args(argv)
    if not 0 < args.fraction <= 1:
        print(f"error: --fraction {args.fraction}: expected a number in (0, 1]. Fix: pass e.g. 0.1.",
              file=sys.stderr)
        return 1
    if args.out.exists():  # never over someone's file (a model, the data)
        print(f"error: {args.out} exists. Fix: name a new .pt2 file.", file=sys.stderr)
        return 1
    print(export_lookup(args.data, args.out, fraction=args.fraction))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
