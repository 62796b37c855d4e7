"""Track verification: what the content check costs, and what it says about a forgery.

    python -m benchmarks.track_check --data ROOT     (from the repository root)

ROOT holds a real render of the CPU track's test split (``ident3d render --track 3dident-v2-64
--split test --data ROOT --workers 2``, about 2 minutes). The benchmark times the track check
(``ident3d.tracks.differences``) with the track's sample (688 images), again once that content is
recorded as verified on this machine (a scratch cache folder), and with ``quick``, then copies the
split with every
image after the first 256 replaced by Gaussian noise whose mean and standard deviation match the
track's fingerprint (the first 256 stay real, so the fingerprint passes) and prints the verdict.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from ident3d.layout import SplitLayout
from ident3d.tracks import differences, get_track

TRACK = "3dident-v2-64"


def timed_check(track, layout: SplitLayout, quick: bool) -> tuple[float, list[str]]:
    start = time.perf_counter()
    found = differences(track, layout, quick=quick)
    return time.perf_counter() - start, found


CHECKS = (("sample", False), ("sample, content verified before", False), ("quick", True))


def forge(layout: SplitLayout, track, folder: Path) -> SplitLayout:
    """A copy of the split whose images after the fingerprint's first ones are fingerprint-matched noise."""
    shutil.copytree(layout.folder, folder / layout.split)
    forged = SplitLayout(folder, layout.split)
    rng = np.random.default_rng(0)
    mean = np.array(track.fingerprint["mean"]) * 255
    std = np.array(track.fingerprint["std"]) * 255
    size = track.resolution
    for i in range(track.fingerprint["images"], track.split(layout.split).n):
        pixels = np.clip(rng.normal(mean, std, (size, size, 3)).round(), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(forged.image(i, 4))
    return forged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="root holding the CPU track's test/")
    args = parser.parse_args()
    track = get_track(TRACK)
    layout = SplitLayout(args.data, "test")
    print(f"## Track check ({track.id}, test split, {track.split('test').n:,} images)\n")
    print("| split | check | seconds | verdict |\n|---|---|---:|---|")
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="ident3d-cache-")  # nothing verified yet
    for label, quick in CHECKS:
        seconds, found = timed_check(track, layout, quick)
        print(f"| real render | {label} | {seconds:.1f} | {'is the track' if not found else found[0]} |")
    with tempfile.TemporaryDirectory(prefix="ident3d-forged-") as scratch:
        forged = forge(layout, track, Path(scratch))
        for label, quick in CHECKS[::2]:
            seconds, found = timed_check(track, forged, quick)
            print(f"| noise after image {track.fingerprint['images']} | {label} | "
                  f"{seconds:.1f} | {'is the track' if not found else found[0]} |")


if __name__ == "__main__":
    main()
