from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ident3d.cli.arguments import add_dataset_root, positive_int, split_name

HELP = "check a dataset: layout, counts, latent ranges, every image decodes, checksums; --repair fixes"
EXAMPLE = ("ident3d audit --data data/3dident --split test --quick\n"
           "  ident3d audit --data data/3dident --split train --repair   # re-render broken images, re-pack")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_dataset_root(p, "dataset root holding the splits", old_positional=True)
    p.add_argument("--split", type=split_name, action="append",
                   help="split to check (repeatable; default: all)")
    p.add_argument("--quick", action="store_true", help="decode a sample of 100 images per split (and "
                                                        "re-render 4, not the track's full sample)")
    p.add_argument("--full", action="store_true", help="with --track: re-render every image of the split, "
                                                       "not the track's random sample")
    p.add_argument("--repair", action="store_true",
                   help="re-render missing or broken images of a rendered split and re-pack a stale "
                        "images.npy, then check again")
    p.add_argument("--workers", type=positive_int, default=1, help="render processes for --repair")
    p.add_argument("--track", help="also prove the split is this benchmark track's (latents, variant spec, "
                                   "settings, pixel fingerprint, a random sample re-rendered now) and "
                                   "say what differs otherwise")


def repair(root: Path, split: str, report, workers: int, progress: bool) -> None:
    from ident3d.errors import DatasetError
    from ident3d.layout import SplitLayout

    lay = SplitLayout(root, split)
    if report.broken:
        if not lay.render_job.exists():
            raise DatasetError(f"{lay.folder}: cannot re-render, it was not rendered by ident3d. "
                               f"Fix: {lay.repair_command()}")
        from ident3d.render.job import repair_split

        repair_split(lay, report.broken, workers=workers, progress=progress)
    if report.packed_stale:
        from ident3d.packing import pack_split

        lay.packed.unlink(missing_ok=True)
        pack_split(root, split, progress=progress)


def track_verdict(root: Path, split: str, name: str, quick: bool, full: bool) -> bool:
    from ident3d.layout import SplitLayout
    from ident3d.tracks import differences, get_track

    track = get_track(name)
    found = differences(track, SplitLayout(root, split), quick=quick, full=full)
    print(f"{split}: {'is' if not found else 'is NOT'} the {split} split of track {track.id}")
    for difference in found:
        print(f"  - {difference}")
    return not found


def run(args: argparse.Namespace) -> int:
    from ident3d.integrity import check_integrity
    from ident3d.layout import splits_under

    if args.track:  # an unknown track is said before any image is read
        from ident3d.tracks import get_track

        get_track(args.track)
    splits = splits_under(args.data, args.split)
    if args.full and (args.quick or not args.track):
        print("error: --full re-renders every image of a track's split, so it needs --track and excludes "
              "--quick. Fix: ident3d audit --data ROOT --split test --track NAME --full", file=sys.stderr)
        return 2
    failed = False
    for split in splits:
        report = check_integrity(args.data, split, args.quick)
        if args.repair and (report.broken or report.packed_stale):
            print(f"{split}: repairing {len(report.broken)} image(s)"
                  + (" and images.npy" if report.packed_stale else ""))
            repair(args.data, split, report, args.workers, not args.quiet)
            report = check_integrity(args.data, split, args.quick)
        print(f"{split}: {report.checked} images checked, {len(report.problems)} problems")
        for problem in report.problems:
            print(f"  - {problem}")
        failed |= bool(report.problems)
        if args.track:
            failed |= not track_verdict(args.data, split, args.track, args.quick, args.full)
    return 1 if failed else 0
