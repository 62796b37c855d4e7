from __future__ import annotations

import argparse

from ident3d.cli.arguments import add_dataset_root

HELP = "download the published 3DIdent from Zenodo (resumable, MD5-checked, safe extraction)"
EXAMPLE = "ident3d download --data data/3dident --split test"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ident3d.download import DEFAULT_BASE_URL, DEFAULT_RECORD

    add_dataset_root(p, "dataset root to download into", old_option="--root")
    p.add_argument("--split", default="all", choices=["train", "test", "all"], help="which split to fetch")
    p.add_argument("--record", default=DEFAULT_RECORD, help="Zenodo record id")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL,
                   help="Zenodo server (env IDENT3D_ZENODO_URL)")
    p.add_argument("--backend", default="builtin", choices=["builtin", "zenodo-get"],
                   help="HTTP client: the built-in one, or the zenodo_get tool (extra: zenodo)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing split, only once the new one is downloaded and checked")


def run(args: argparse.Namespace) -> int:
    from ident3d.download import download_split

    for split in ("train", "test") if args.split == "all" else (args.split,):
        print(download_split(args.data, split, args.record, args.base_url, args.backend,
                             progress=not args.quiet, overwrite=args.overwrite))
    return 0
