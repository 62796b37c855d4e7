from __future__ import annotations

import argparse
from pathlib import Path

from ident3d.cli.arguments import device_name, positive_float, positive_int, split_name
from ident3d.outputs import check_output_file
from ident3d.protocols import DEFAULT, REGISTRY
from ident3d.sandbox.limits import Limits, SandboxLimits

HELP = "score an encoder (.pt2, safetensors + --arch, or .npy embeddings) on the test split"
EXAMPLE = ("ident3d evaluate --data data/3dident --model encoder.pt2 --name MyModel --out result.json\n"
           "  ident3d evaluate --data data/cpu-track --model encoder.pt2 --fresh --out verified.json"
           "   # and a fresh draw")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, required=True, help="dataset root holding test/")
    p.add_argument("--model", type=Path, required=True, help=".pt2, .safetensors or .npy")
    p.add_argument("--arch", help="registered architecture for .safetensors weights")
    p.add_argument("--name", help="model name in the result (default: file stem)")
    p.add_argument("--protocol", default=DEFAULT, choices=list(REGISTRY),
                   help="evaluation protocol: " + "; ".join(f"{proto.name} {proto.version}: {proto.summary}"
                                                          for proto in REGISTRY.values()))
    p.add_argument("--split", type=split_name, default="test", help="split folder to score on")
    p.add_argument("--device", type=device_name,
                   help="gpu, cpu, cuda:N (default: the GPU when there is one)")
    p.add_argument("--batch-size", type=positive_int, default=256, help="images per forward pass")
    p.add_argument("--fresh", type=fresh_size, nargs="?", const="track", metavar="N",
                   help="also render N new test images of the split's track from a seed drawn now, score "
                        "the model on them and report the memorisation gap (N: the track's default when "
                        "omitted; needs the render extra; docs/submissions.md)")
    p.add_argument("--fresh-seed", type=int, metavar="SEED",
                   help="with --fresh: render the draw of this revealed seed again (to re-score a result; "
                        "such a draw is not unseen, and the result says so)")
    p.add_argument("--workers", type=positive_int, default=2, help="render processes for --fresh")
    p.add_argument("--out", type=Path, help="result JSON to write (without it the scores are printed only, "
                   "and nothing can be entered on a leaderboard)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    limits = p.add_argument_group("sandbox limits (docs/submissions.md; for maintainers)")
    limits.add_argument("--memory-limit", type=positive_float, default=SandboxLimits.memory_gib,
                        metavar="GIB", help="memory the model may use, in GiB (default: %(default)s)")
    limits.add_argument("--time-limit", type=positive_float, default=SandboxLimits.batch_seconds,
                        metavar="SECONDS", help="wall time per batch (default: %(default)s)")
    limits.add_argument("--max-parameters", type=positive_int, default=Limits.max_parameters,
                        help="largest parameter count accepted (default: %(default)s)")
    limits.add_argument("--max-feature-dim", type=positive_int, default=Limits.max_feature_dim,
                        help="largest feature dimension accepted (default: %(default)s)")


def fresh_size(text: str) -> int | str:
    """``--fresh`` alone (or ``--fresh track``) draws the track's default size; else a positive count."""
    return "track" if text == "track" else positive_int(text)


def check_inputs(args: argparse.Namespace) -> None:
    """The model file and the split, checked before torch is imported or the sandbox starts (and so
    is ``--out``, in ``run``)."""
    from ident3d.errors import DatasetError
    from ident3d.submission_files import submission_kind

    submission_kind(args.model)
    if not args.data.is_dir():
        raise DatasetError(f"--data {args.data}: no such folder. Fix: pass the dataset root that holds "
                           f"{args.split}/ (ident3d render --data ROOT makes one).")
    if not (args.data / args.split).is_dir():
        found = sorted(p.name for p in args.data.iterdir() if (p / "images").is_dir() or
                       (p / "manifest.json").is_file() or (p / "raw_latents.npy").is_file())
        raise DatasetError(f"--split {args.split}: {args.data} holds no split of that name (its splits: "
                           f"{', '.join(found) or 'none'}). Fix: pass one of them with --split.")


def run(args: argparse.Namespace) -> int:
    check_inputs(args)
    if args.out is not None:
        check_output_file(args.out, "--out", reads=(args.model, args.data), overwrite=args.overwrite)
    if args.model.suffix.lower() in (".pt2", ".safetensors"):
        from ident3d.sandbox import spawn

        spawn.prestart()  # the sandbox imports torch while this process does the same
    from ident3d.evaluation import evaluate

    limits = SandboxLimits(memory_gib=args.memory_limit, batch_seconds=args.time_limit,
                           reader=Limits(max_parameters=args.max_parameters,
                                         max_feature_dim=args.max_feature_dim))
    result = evaluate(args.model, args.data, protocol=args.protocol, device=args.device,
                      batch_size=args.batch_size, name=args.name, arch=args.arch,
                      split=args.split, progress=not args.quiet, limits=limits, fresh=args.fresh,
                      workers=args.workers, fresh_seed=args.fresh_seed)
    print(result.table())
    if args.out is None:
        print("not written: pass --out FILE.json to keep the result (and to enter it on a leaderboard)")
        return 0
    result.save(args.out, overwrite=args.overwrite)
    print(f"wrote {args.out}")
    print(result.destination(args.out))
    return 0
