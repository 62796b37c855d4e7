from __future__ import annotations

import argparse
import math
from pathlib import Path

from ident3d.cli.arguments import (
    VARIANT_HELP,
    add_dataset_root,
    blender_device,
    nonnegative_int,
    positive_int,
    split_name,
    variant_arg,
)
from ident3d.latents import CONDITIONALS
from ident3d.outputs import check_output_folder
from ident3d.render.settings import PRESETS

HELP = "render a 3DIdent split with Blender (resumable; local processes, Ray, or one shard)"
EXAMPLE = ("ident3d render --data data/3dident --split train --n 1000 --seed 0 --preset standard\n"
           "  ident3d render --track 3dident-v2-64 --split test --data data/cpu-track --workers 2\n"
           "  ident3d render --data data/3dident --split train --n 250000 --shard 3/64   # Slurm array\n"
           "  ident3d render --data data/3dident --split train --finalize\n"
           "  ident3d render --data data/paired --split train --n 20000 --pairs --scale 0.05  # exact pairs\n"
           "  ident3d render --data data/preview-4k --split train --n 4000 --grow-from data/preview/train")


def shard_arg(text: str) -> tuple[int, int]:
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/4, got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"expected 0 <= I < N, got {text!r}")
    return i, n


def scale_arg(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_dataset_root(p, "dataset root to render into", old_option="--out")
    p.add_argument("--split", type=split_name, default="train", help="split folder name (train, test, ...)")
    p.add_argument("--track", help="render exactly this benchmark track's --split (see `ident3d tracks`); "
                                   "sets the sizes, seeds, variant and render settings")
    p.add_argument("--n", type=positive_int,
                   help="number of images (of pairs with --pairs; not needed with --latents)")
    p.add_argument("--seed", type=nonnegative_int, help="seed of the uniform latents (default: 0)")
    p.add_argument("--variant", type=variant_arg, help=VARIANT_HELP + " (default: v2)")
    p.add_argument("--preset", choices=list(PRESETS),
                   help="quality preset (default: standard)")
    p.add_argument("--resolution", type=positive_int, help="override the preset's image size (px)")
    p.add_argument("--samples", type=positive_int, help="override the preset's Cycles samples")
    p.add_argument("--device", default="cpu", type=blender_device, choices=["cpu", "gpu"],
                   help="Blender Cycles device")
    p.add_argument("--latents", type=Path, help="render these raw latents (.npy, one row per image)")
    p.add_argument("--pairs", action="store_true",
                   help="a paired split: --n exact positive pairs (2n images; anchor 2i, positive 2i+1) "
                        "drawn from --conditional with --scale, no nearest-neighbour snapping")
    p.add_argument("--conditional", default="normal", choices=CONDITIONALS,
                   help="with --pairs: the positive's distribution around the anchor")
    p.add_argument("--scale", type=scale_arg, default=(0.1,), metavar="S[,S,...]",
                   help="with --pairs: one scale, or one per latent (comma-separated) (default: 0.1)")
    p.add_argument("--beta", type=float, help="with --pairs --conditional gennorm: the exponent")
    p.add_argument("--style", metavar="NAME[,NAME,...]",
                   help="with --pairs: a content/style split instead of --scale: these latents are "
                        "resampled from their marginal, every other latent is shared exactly")
    p.add_argument("--workers", type=positive_int, default=1, help="render processes (or Ray CPUs)")
    p.add_argument("--engine", default="local", choices=["local", "ray"],
                   help="where render processes run: this machine, or a Ray cluster")
    p.add_argument("--ray-address", help="connect to this Ray cluster instead of starting one")
    p.add_argument("--shard", type=shard_arg, default=(0, 1), metavar="I/N",
                   help="render only shard I of N (for job arrays); finalizes when all exist")
    p.add_argument("--grow-from", type=Path, metavar="SPLIT_FOLDER",
                   help="render this finished split grown to --n images (pairs for a paired split) into "
                        "--data/--split: the same variant, seed and settings, its images reused (linked), "
                        "only the new ones rendered; the source is never written")
    p.add_argument("--finalize", action="store_true",
                   help="only merge finished shards of --data/--split into manifest.json")


def track_job(args: argparse.Namespace):
    """The render job of a track's split; flags that would change its data are refused."""
    from ident3d.render.job import plan_track_job
    from ident3d.tracks import TrackError, get_track

    track = get_track(args.track)
    if track.source != "render":
        raise TrackError(f"track {track.id} is downloaded, not rendered. Fix: `ident3d download --data "
                         f"{args.data} --split {args.split}`")
    clashes = [flag for flag, value in (("--n", args.n), ("--seed", args.seed), ("--variant", args.variant),
                                        ("--preset", args.preset), ("--resolution", args.resolution),
                                        ("--samples", args.samples), ("--latents", args.latents),
                                        ("--pairs", args.pairs or None))
               if value is not None]
    if clashes:
        raise TrackError(f"--track {track.id} fixes the data; {', '.join(clashes)} would change it. "
                         "Fix: drop those flags (or drop --track to render custom data).")
    return plan_track_job(args.data, track, args.split, args.device)


def growth_job(args: argparse.Namespace):
    """The job of a grown split; flags that would change its data are refused."""
    from ident3d.errors import RenderError
    from ident3d.render.grow import plan_growth, reuse_images

    clashes = [flag for flag, value in (("--track", args.track), ("--seed", args.seed),
                                        ("--variant", args.variant), ("--preset", args.preset),
                                        ("--resolution", args.resolution), ("--samples", args.samples),
                                        ("--latents", args.latents), ("--pairs", args.pairs or None))
               if value is not None]
    if clashes:
        raise RenderError(f"--grow-from {args.grow_from} takes the data's settings from that split; "
                          f"{', '.join(clashes)} would change them. Fix: drop those flags.")
    if args.n is None:
        raise RenderError(f"--grow-from {args.grow_from} needs --n, the size of the grown split. "
                          "Fix: add --n N.")
    job = plan_growth(args.grow_from, args.data, args.split, args.n, args.device)
    reused = reuse_images(job, args.grow_from)
    if not args.quiet:
        print(f"reused {reused} image(s) of {args.grow_from}; rendering the rest")
    return job


def run(args: argparse.Namespace) -> int:
    from ident3d.layout import SplitLayout
    from ident3d.render.job import finalize, plan_job, render_split
    from ident3d.render.settings import resolve_settings

    check_output_folder(args.data, "--data")
    if args.finalize:
        print(finalize(SplitLayout(args.data, args.split)))
        return 0
    if args.grow_from:
        job = growth_job(args)
    elif args.track:
        job = track_job(args)
    else:
        settings = resolve_settings(args.preset or "standard", args.resolution, args.samples,
                                    device=args.device)
        pairs = ({"conditional": args.conditional, "scale": args.scale[0] if len(args.scale) == 1
                  else list(args.scale), "beta": args.beta,
                  **({"style": args.style.split(",")} if args.style else {})} if args.pairs else None)
        job = plan_job(args.data, args.split, n=args.n, seed=0 if args.seed is None else args.seed,
                       variant=args.variant or "v2", settings=settings, latents_file=args.latents,
                       pairs=pairs)
    manifest = render_split(job, engine=args.engine, workers=args.workers, shard=args.shard,
                            ray_address=args.ray_address, progress=not args.quiet)
    if manifest is None:
        print(f"shard {args.shard[0]}/{args.shard[1]} done; the split is finalized when all "
              "shards exist (or run with --finalize)")
    else:
        print(manifest)
    return 0
