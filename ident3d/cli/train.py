from __future__ import annotations

import argparse
from pathlib import Path

from ident3d.baselines import presets
from ident3d.cli.arguments import (
    device_name,
    nonnegative_int,
    positive_float,
    positive_int,
)
from ident3d.outputs import check_output_folder

HELP = "train a baseline encoder (ResNet18, the paper's losses) from a preset; exports and scores it"
EXAMPLE = ("ident3d train --data data/3dident --preset normal-box --out runs/normal-box --device gpu\n"
           "  ident3d train --data demo-out/data --preset smoke --out runs/smoke --resume")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, required=True, help="dataset root holding train/ and test/")
    p.add_argument("--preset", default="normal-box", choices=presets.names(),
                   help="the baseline to start from (a file of baselines/presets/)")
    p.add_argument("--config", type=Path, metavar="FILE.toml",
                   help="your settings on top of the preset (keys as in baselines/presets/*.toml)")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="one setting on top of --config, e.g. --set tau=0.5 --set scale=[0.1,0.2]; "
                        "repeatable; any field of TrainConfig in baselines/config.py")
    p.add_argument("--out", type=Path, required=True, help="run folder (checkpoints, logs, exports)")
    p.add_argument("--device", type=device_name, metavar="{cpu,gpu,cuda:N,auto}",
                   help="gpu (= cuda), cuda:N, cpu, or auto; default: the preset's")
    p.add_argument("--iterations", type=positive_int, help="default: the preset's")
    p.add_argument("--batch-size", type=positive_int, help="default: the preset's")
    p.add_argument("--lr", type=positive_float, help="encoder learning rate; default: the preset's")
    p.add_argument("--seed", type=nonnegative_int, help="default: the preset's (0)")
    p.add_argument("--workers", type=nonnegative_int,
                   help="DataLoader processes; default: 0 on CPU, up to 8 on CUDA")
    p.add_argument("--stem", choices=["imagenet", "small"],
                   help="ResNet18 stem: imagenet (the paper's) or small (3x3 stride 1, no max-pool, for "
                        "32-64 px images); default: the preset's")
    p.add_argument("--compile", action="store_true", default=None, help="torch.compile the encoder")
    p.add_argument("--no-amp", dest="amp", action="store_false", default=None,
                   help="train in float32 on CUDA (default: bf16 autocast)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument("--overwrite", action="store_true",
                   help="start over in a non-empty --out: the folder is replaced when the new run is done")


def run(args: argparse.Namespace) -> int:
    from ident3d.baselines.config import build_config
    from ident3d.baselines.train import train

    check_output_folder(args.out, "--out", reads=(args.data, args.config))
    if args.resume and not (args.out / "config.json").exists():
        from ident3d.errors import TrainingError

        raise TrainingError(f"--resume {args.out}: no run there to resume (no config.json). "
                            "Fix: drop --resume to start a new run.")
    config = build_config(args.preset, data=args.data.resolve(), config_file=args.config,
                          settings=args.settings, device=args.device, iterations=args.iterations,
                          batch_size=args.batch_size, lr=args.lr, seed=args.seed, workers=args.workers,
                          compile=args.compile, amp=args.amp, stem=args.stem)
    written = train(config, args.out, resume=args.resume, progress=not args.quiet, overwrite=args.overwrite)
    if written is None:  # another process of a torchrun run writes and shows the result
        return 0
    if written.name == "result.json":  # scored on the test split: show the score as evaluate does
        from ident3d.errors import TrainingError
        from ident3d.readers import read_json
        from ident3d.results import Result

        result = Result.parse(read_json(written, TrainingError, "re-run with --resume to score it again"),
                              str(written))
        print(result.table())
        print(f"wrote {written}")
        print(result.destination(written))
    else:
        print(f"wrote {written} (no test split beside the training data, so no score)")
    return 0
