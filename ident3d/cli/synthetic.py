from __future__ import annotations

import argparse
from pathlib import Path

from ident3d.cli.arguments import device_name, nonnegative_int, positive_float, positive_int, seed_list
from ident3d.outputs import check_output_file

HELP = ("the papers' synthetic experiments (Zimmermann et al. Tables 1-2, AnInfoNCE's controlled "
        "experiment): list rows, run a row and seed, report")
EXAMPLE = ("ident3d synthetic rows\n"
           "  ident3d synthetic run --row T2.1 --seed 0 --out results/synthetic\n"
           "  ident3d synthetic run --row T2.1 --seeds 0,1,2 --out results/synthetic   # one stacked model\n"
           "  ident3d synthetic sweep --out baselines/synthetic/results   # the measured plan\n"
           "  ident3d synthetic report --results results/synthetic --out docs/synthetic-results.md")


def _device_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", type=device_name, metavar="{cpu,gpu,cuda:N,auto}", default="auto",
                   help="where to train (default auto: CUDA when present); on a GPU torch draws the pairs "
                        "there, on the CPU numpy does")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub.add_parser("rows", help="print every row: id, theory, setting, the paper's numbers")
    run = sub.add_parser("run", help="train and score one row for one seed (resumes where it stopped)")
    run.add_argument("--row", required=True, help="a row id of `ident3d synthetic rows`, e.g. T2.1")
    run.add_argument("--column", choices=("unsupervised", "identity", "supervised"), default="unsupervised",
                     help="the paper's column: the contrastive encoder (default), the identity read-out of "
                          "g, or the encoder fitted to z by MSE")
    seeds = run.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=nonnegative_int, default=0)
    seeds.add_argument("--seeds", type=seed_list, metavar="S,S,...",
                       help="several seeds trained at once as one stacked model, one result file each "
                            "(each seed's pairs and initialisation are its own run's; docs/synthetic.md)")
    run.add_argument("--out", type=Path, required=True,
                     help="folder of result files (one per row, seed and budget)")
    run.add_argument("--steps", type=positive_int, help="training steps (default: the budget's, 10000)")
    run.add_argument("--batch-size", type=positive_int, help="default: 256")
    run.add_argument("--lr", type=positive_float, help="encoder learning rate (default: 1e-4, the paper's)")
    run.add_argument("--loss-lr", type=positive_float, help="Lambda's learning rate (default: 1e-3)")
    run.add_argument("--precision-map", choices=["exp", "softplus"],
                     help="Lambda from its raw parameter (default: exp; softplus is the AnInfoNCE code's)")
    run.add_argument("--eval-every", type=positive_int, help="steps between curve points (default: 500)")
    run.add_argument("--precision", choices=["fp32", "tf32", "bf16"],
                     help="arithmetic of the forward pass and loss (default fp32; tf32 on CUDA only; each "
                          "changes the numbers, docs/synthetic.md says how)")
    _device_argument(run)
    sweep = sub.add_parser("sweep", help="run a plan of rows x seeds (resumable; processes share the work)")
    sweep.add_argument("--plan", type=Path,
                       help="a plan TOML (default: the package's baselines/synthetic/plan.toml)")
    sweep.add_argument("--only", help="run only the sweep of this name")
    sweep.add_argument("--out", type=Path, required=True, help="folder of result files")
    _device_argument(sweep)
    sweep.add_argument("--stacked", action="store_true",
                       help="train each row's seeds as one stacked model (as run --seeds does)")
    sweep.add_argument("--devices", metavar="{all,DEVICE,...}",
                       help="one process per device, sharing the plan: all (every visible GPU) or a comma "
                            "list such as cuda:0,cuda:1 (instead of --device)")
    report = sub.add_parser("report", help="the Markdown table of a folder of results, paper numbers beside")
    report.add_argument("--results", type=Path, required=True, help="the folder `run --out` wrote")
    report.add_argument("--out", type=Path, help="write the report here, its figures into "
                        "synthetic-figures/ beside it (default: print the report)")
    report.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    report.add_argument("--summary", action="store_true",
                        help="the short table of docs/synthetic.md instead of the full report")
    report.add_argument("--readme", action="store_true",
                        help="README's table (each row at its best-seeded budget) instead of the full report")


def run(args: argparse.Namespace) -> int:
    if args.action == "rows":
        from ident3d.baselines.synthetic.report import paper_cell
        from ident3d.baselines.synthetic.table import rows

        for row in rows().values():
            paper = ", ".join(f"{column} {metric} {paper_cell(value)}"
                              for metric, columns in row.paper.items() for column, value in columns.items())
            print(f"{row.id:6} {row.theory:12} {row.title}" + (f"  [paper: {paper}]" if paper else ""))
        return 0
    if args.action == "report":
        from ident3d.baselines.synthetic.report import FIGURES, figures, readme_block, report, summary_block

        short = summary_block if args.summary else readme_block if args.readme else None
        text = short(args.results) + "\n" if short else report(args.results)
        if args.out is None:
            print(text, end="")
            return 0
        from ident3d import atomic

        drawn = {} if short else figures(args.results)
        beside = args.out.parent / FIGURES
        targets = [(args.out, text), *((beside / name, svg) for name, svg in drawn.items())]
        for path, _ in targets:
            check_output_file(path, "--out", reads=(args.results,), overwrite=args.overwrite)
        for path, content in targets:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(path, content.encode())
        return 0
    if args.action == "sweep":
        from ident3d.baselines.synthetic.sweep import load_plan, sweep, sweep_on_devices

        plan = load_plan(args.plan)
        if args.devices is None:
            for path in sweep(plan, args.out, only=args.only, progress=not args.quiet, device=args.device,
                              stacked=args.stacked):
                print(path)
            return 0
        from ident3d.devices import visible_devices
        from ident3d.errors import DeviceError

        if args.device != "auto":
            raise DeviceError(f"--device {args.device} and --devices {args.devices}: choose one. Fix: drop "
                              "--device (--devices runs one process on each device it names).")
        for device, paths in sweep_on_devices(plan, args.out, visible_devices(args.devices), only=args.only,
                                              progress=not args.quiet, stacked=args.stacked).items():
            for path in paths:
                print(f"{path}  ({device})")
        return 0
    from dataclasses import replace

    from ident3d.baselines.synthetic.budget import Budget
    from ident3d.baselines.synthetic.run import run_seeds
    from ident3d.baselines.synthetic.table import get_row

    chosen = {"steps": args.steps, "batch_size": args.batch_size, "lr": args.lr, "loss_lr": args.loss_lr,
              "precision_map": args.precision_map, "eval_every": args.eval_every, "precision": args.precision}
    budget = replace(Budget(), **{k: v for k, v in chosen.items() if v is not None})
    for path in run_seeds(get_row(args.row), args.seeds or [args.seed], budget, args.out,
                          progress=not args.quiet, column=args.column, device=args.device):
        print(path)
    return 0
