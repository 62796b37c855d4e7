from __future__ import annotations

import argparse
from pathlib import Path

from ident3d.cli.arguments import VARIANT_HELP, blender_device, positive_int, variant_arg
from ident3d.outputs import check_output_file
from ident3d.render.settings import PRESETS

HELP = "render a latent-traversal figure: one row per latent swept over its range (Figure 3)"
EXAMPLE = ("ident3d traverse --out fig.png --variant v2 --steps 7\n"
           "  ident3d traverse --out legacy.png --variant legacy --preset standard --workers 2")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="figure to write (.png)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out figure")
    p.add_argument("--variant", default="v2", type=variant_arg, help=VARIANT_HELP)
    p.add_argument("--steps", type=positive_int, default=7, help="images per row")
    p.add_argument("--preset", default="preview", choices=list(PRESETS), help="quality preset")
    p.add_argument("--resolution", type=positive_int, help="override the preset's image size (px)")
    p.add_argument("--samples", type=positive_int, help="override the preset's Cycles samples")
    p.add_argument("--device", default="cpu", type=blender_device, choices=["cpu", "gpu"],
                   help="Blender Cycles device")
    p.add_argument("--workers", type=positive_int, default=1, help="render processes")
    p.add_argument("--cache", type=Path,
                   help="where the single renders are kept for resuming (default: next to --out)")


def run(args: argparse.Namespace) -> int:
    from ident3d.errors import RenderError
    from ident3d.render.settings import resolve_settings
    from ident3d.render.traverse import render_traversal

    if args.out.suffix.lower() != ".png":
        raise RenderError(f"--out {args.out}: the figure is written as PNG. Fix: end the name with .png")
    spec = Path(args.variant) if args.variant.endswith(".toml") else None
    check_output_file(args.out, "--out", reads=(spec,), overwrite=args.overwrite)
    settings = resolve_settings(args.preset, args.resolution, args.samples, device=args.device)
    print(render_traversal(args.out, variant=args.variant, steps=args.steps, settings=settings,
                           cache=args.cache, workers=args.workers, progress=not args.quiet))
    return 0
