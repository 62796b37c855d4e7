"""The pixel read-out: the paper's "identity" row, the image itself as the features.

Each image is average-pooled to 8 x 8 per channel (192 features), so a linear read-out sees the
pixels without having more features than the fit set has images. Exported as a ``.pt2`` like any
submission, so the evaluator scores it the same way:

    python -m ident3d.baselines.pixels OUT.pt2 --size 64
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

POOLED_SIZE = 8


class PixelReadout(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.adaptive_avg_pool2d(x, POOLED_SIZE).flatten(1)


def export_pixel_readout(path: Path, size: int) -> Path:
    """Write the read-out for ``size`` x ``size`` images as a ``.pt2`` (any batch size)."""
    from ident3d.baselines.train import export_program

    return export_program(PixelReadout(), Path(path), size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the .pt2 file to write")
    parser.add_argument("--size", type=int, required=True, help="image size in pixels (the data's)")
    args = parser.parse_args(argv)
    print(export_pixel_readout(args.out, args.size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
