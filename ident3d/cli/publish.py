from __future__ import annotations

import argparse
from pathlib import Path

from ident3d.cli.arguments import add_dataset_root, positive_int, split_name
from ident3d.outputs import check_output_folder

HELP = ("publish splits for a data hub: Parquet shards, Croissant 1.1 metadata, a Hugging Face dataset "
        "card and a datasheet")
EXAMPLE = ("ident3d publish --track 3dident-v2-64 --data data/cpu-track --split test --out bundles/cpu\n"
           "  ident3d publish --data data/my-variant --out bundles/my-variant   # every split, no track")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_dataset_root(p, "dataset root holding the splits")
    p.add_argument("--split", type=split_name, action="append",
                   help="split to publish (repeatable; default: every split under --data)")
    p.add_argument("--track", help="name the bundle as this benchmark track, after proving each split is "
                                   "the track's (as `ident3d audit --track` does)")
    p.add_argument("--out", type=Path, required=True, help="the bundle folder (new or empty)")
    p.add_argument("--shard-size", type=positive_int, default=10_000, help="images per Parquet shard")


def run(args: argparse.Namespace) -> int:
    from ident3d.publish import publish
    from ident3d.tracks import get_track

    check_output_folder(args.out, "--out", reads=(args.data,))
    track = get_track(args.track) if args.track else None
    facts = publish(args.data, args.out, args.split, track, args.shard_size)
    shards = sum(len(s.shards) for s in facts.splits)
    print(f"{args.out}: {facts.name}, {facts.n_images:,} images in {shards} Parquet shard(s), "
          "croissant.json, README.md (dataset card), DATASHEET.md")
    return 0
