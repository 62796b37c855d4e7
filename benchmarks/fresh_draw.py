"""What a fresh draw costs, per rendered track, and how large it must be; the scoring probe's overhead.

    python -m benchmarks.fresh_draw [--images 200] [--data ROOT]     (from the repository root)

For each rendered track: seconds per image to render a draw of ``--images`` test images (start-up
included, 2 processes) and seconds to score an 8 x 8 pixel-pooling encoder on it in the sandbox,
then the projected cost of the track's default draw (``fresh_images``). With ``--data`` (a root
holding the CPU track's test split, as `ident3d render --track 3dident-v2-64 --split test` makes
it), the half-width of the fresh score's 95% bootstrap interval at several draw sizes, from
subsamples of that split (a draw of N images has the spread of N public images), and the probe's
overhead: scoring time with and without ``ScoringProbe``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

import numpy as np
import torch

from ident3d import fresh
from ident3d.baselines.pixels import export_pixel_readout
from ident3d.batching import image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.evaluation import evaluate
from ident3d.protocols import REGISTRY
from ident3d.sandbox.host import ScoringProbe
from ident3d.submissions import Standardisation, load_submission
from ident3d.tracks import tracks


def export(resolution: int, folder: Path) -> Path:
    return export_pixel_readout(folder / f"pixels-{resolution}.pt2", resolution)


def draw_costs(images: int) -> None:
    print(f"| track | px | render s/image | score s ({images} images) | default draw | its projected cost |")
    print("|---|---:|---:|---:|---:|---:|")
    for track in tracks().values():
        if track.source != "render":
            continue
        with tempfile.TemporaryDirectory() as scratch:
            began = time.perf_counter()
            fresh.render_draw(track, images, fresh.draw_seed(), Path(scratch) / "draw")
            render = (time.perf_counter() - began) / images
            model = export(track.resolution, Path(scratch))
            began = time.perf_counter()
            evaluate(model, Path(scratch) / "draw", progress=False)  # one more scoring pass
            scored = time.perf_counter() - began
        n = track.fresh_images or 0
        cost = n * render + scored * n / images
        print(f"| {track.id} | {track.resolution} | {render:.3f} | {scored:.1f} | {n:,} | "
              f"{cost / 60:.1f} min |")


def interval_widths(data: Path) -> None:
    """The fresh score's 95% interval at N images: N held-out rows of the public split scored by the
    read-outs fitted on its other half, as a fresh draw of N images is."""
    split = ThreeDIdent(data, "test")
    sub = load_submission(export(64, Path(tempfile.mkdtemp())))
    try:
        h = np.concatenate([sub.model(image_batch(split, np.arange(start, min(start + 256, len(split)))))
                            for start in range(0, len(split), 256)])
    finally:
        sub.close()
    z = split.latents.astype(np.float64)
    h = Standardisation.fit(h)(h, "pixels")
    protocol = REGISTRY["ident3d-eval-v1"]
    s = protocol.score(z, h)
    readout = fresh.Readout(z[s.fit], h[s.fit], np.asarray(s.assignment), protocol)
    print("\n| draw size N | linear R² | its 95% interval | half-width (points) | MCC half-width (points) |")
    print("|---:|---:|---|---:|---:|")
    for n in (250, 500, 1000, 2000, 2500):
        rows = s.test[:n]
        means = readout.means(readout.per_latent(z[rows], h[rows]))
        boot = readout.resampled(z[rows], h[rows], fresh.BOOTSTRAP_DRAWS, np.random.default_rng(1))
        low, high = np.quantile(boot["linear_r2"], [0.025, 0.975])
        mlow, mhigh = np.quantile(boot["mcc_pearson"], [0.025, 0.975])
        print(f"| {n:,} | {100 * means['linear_r2']:.2f} | [{100 * low:.2f}, {100 * high:.2f}] | "
              f"{50 * (high - low):.2f} | {50 * (mhigh - mlow):.2f} |")


def probe_overhead(data: Path) -> None:
    model = export(64, Path(tempfile.mkdtemp()))
    times = {}
    for label, patch in (("with", nullcontext()), ("without", mock.patch.object(ScoringProbe, "due",
                                                                               lambda self, batch: False))):
        with patch:
            began = time.perf_counter()
            evaluate(model, data, progress=False, protocol="cl-ica-2021")
            times[label] = time.perf_counter() - began
    print(f"\nscoring the CPU track's 5,000 images (cl-ica-2021): {times['with']:.1f} s with the probe, "
          f"{times['without']:.1f} s without ({times['with'] / times['without']:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=200, help="images per measured draw")
    parser.add_argument("--data", type=Path, help="a root holding the CPU track's test split")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads\n")
    draw_costs(args.images)
    if args.data:
        interval_widths(args.data)
        probe_overhead(args.data)


if __name__ == "__main__":
    main()
