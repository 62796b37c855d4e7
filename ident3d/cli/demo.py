"""``ident3d demo``: the whole flow on a small dataset, resumable, with every output's path printed.

render (preview preset; the test split is the CPU track's, 3dident-v2-64) -> pack -> positive
pairs through a DataLoader -> train the `smoke` baseline -> evaluate it (and two reference
read-outs) with ident3d-eval-v1 -> fresh draws: the smoke baseline and a model that memorised the
public test split, each scored on test images rendered now -> a demo leaderboard beside the
committed rows -> where the smoke baseline ranks on the CPU track -> latent-traversal figures. A
second run skips every finished step.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from textwrap import fill

from ident3d.cli.arguments import positive_int
from ident3d.outputs import check_output_folder

CPU_TRACK = "3dident-v2-64"
DEMO_FRESH = 300  # images per fresh draw: about 10 s of rendering at 64 px; intervals about ±3 points
HELP = "render, load, train, evaluate, build a leaderboard and figures on a small dataset (resumable)"
EXAMPLE = "ident3d demo --out demo-out"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("demo-out"), help="where everything goes")
    p.add_argument("--n-train", type=positive_int, default=3000, help="training images to render")
    p.add_argument("--n-test", type=positive_int,
                   help="render a custom test split of this size instead of the CPU track's 5,000 "
                        "images (results on it cannot be compared with the track's entries)")
    p.add_argument("--iterations", type=positive_int, help="training steps (default: the smoke preset's)")
    p.add_argument("--workers", type=positive_int, default=2, help="render processes")
    p.add_argument("--fresh", type=int, default=DEMO_FRESH, metavar="N",
                   help=f"images per fresh draw (default {DEMO_FRESH}; 0: skip the step). Needs the "
                        "track's test split, so --n-test skips it")


def render_data(data: Path, args: argparse.Namespace, progress: bool) -> None:
    from ident3d.packing import pack_split
    from ident3d.render.job import plan_job, plan_track_job, render_split
    from ident3d.render.settings import resolve_settings
    from ident3d.tracks import get_track

    settings = resolve_settings("preview")
    test = (plan_job(data, "test", n=args.n_test, seed=1, variant="v2", settings=settings) if args.n_test
            else plan_track_job(data, get_track(CPU_TRACK), "test"))
    train = plan_job(data, "train", n=args.n_train, seed=0, variant="v2", settings=settings)
    for job in (train, test):
        render_split(job, workers=args.workers, progress=progress)
        pack_split(data, job.layout.split, progress=progress)


def show_pairs(data: Path) -> None:
    from torch.utils.data import DataLoader

    from ident3d.datasets import ThreeDIdent
    from ident3d.pairs import ContrastivePairs

    train = ThreeDIdent(data, "train")
    pairs = ContrastivePairs(train, conditional="normal", scale=0.1, seed=0)
    x, x_pos, z, z_pos = next(iter(DataLoader(pairs, batch_size=64)))
    spread = pairs.effective_conditional(2000)
    print(f"\n{train!r}\none batch of pairs: x {tuple(x.shape)}, z {tuple(z.shape)}")
    print(fill("Each positive is drawn around its anchor's latents with a Normal of sd 0.1, then snapped "
               f"by FAISS to the nearest of the {len(train):,} rendered latents; with this few images the "
               "snap widens the spread the encoder sees. Realised sd of the positive around its anchor, "
               f"per latent: {', '.join(f'{float(s):.2f}' for s in spread)} (more images bring it closer "
               "to 0.1; docs/data.md).", 100))


def reference_readouts(data: Path, models: Path, results: Path, progress: bool) -> dict[str, Path]:
    """The pixel read-out (the paper's identity row) and the true latents (the ceiling)."""
    import numpy as np

    from ident3d.baselines.pixels import export_pixel_readout
    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import evaluate

    models.mkdir(parents=True, exist_ok=True)
    test = ThreeDIdent(data, "test")
    size = test.image_shape[0]
    files = {"pixel-readout": models / "pixels.pt2", "true-latents": models / "true_latents.npy"}
    if not files["pixel-readout"].exists():
        export_pixel_readout(files["pixel-readout"], size)
    if not files["true-latents"].exists():
        np.save(files["true-latents"], test.latents)
    out = {}
    for name, file in files.items():
        out[name] = results / f"{name}.json"
        if not out[name].exists():
            evaluate(file, data, name=name, progress=progress).save(out[name])
    return out


def fresh_draws(data: Path, smoke_model: Path, models: Path, results: Path, n: int, workers: int,
                progress: bool) -> dict[str, Path]:
    """The smoke baseline and the lookup table of the public test split, each scored on ``n`` test
    images of the track rendered now from a seed nobody knew (docs/submissions.md, "Verified means
    unseen"): the honest model keeps its score, the memorising one collapses and is flagged."""
    from ident3d.baselines.lookup import export_lookup
    from ident3d.evaluation import evaluate

    lookup = models / "lookup-table.pt2"
    if not lookup.exists():
        export_lookup(data, lookup)
    out = {}
    for name, model in (("smoke-baseline", smoke_model), ("lookup-table", lookup)):
        out[name] = results / f"{name}-fresh.json"
        if not out[name].exists():
            evaluate(model, data, name=name, fresh=n, workers=workers, progress=progress).save(out[name])
    return out


def demo_leaderboard(folder: Path, smoke_result: Path, readouts: dict[str, Path]) -> list[Path]:
    """The committed entries (the paper's rows among them) plus the demo's, in a leaderboard of its own."""
    import shutil

    from ident3d.leaderboard.build import build
    from ident3d.leaderboard.entries import ENTRIES_DIR, entry_from_result, entry_path, write_entry
    from ident3d.leaderboard.keyring import keyring_folder
    from ident3d.results import Result

    entries = folder / "entries"
    shutil.copytree(ENTRIES_DIR, entries, dirs_exist_ok=True)
    if keyring_folder(ENTRIES_DIR).is_dir():  # the keys that signed the verified rows, beside them
        shutil.copytree(keyring_folder(ENTRIES_DIR), keyring_folder(entries), dirs_exist_ok=True)
    rows = [  # (id, result file, status, positives, loss, space)
        ("Demo2026Smoke", smoke_result, "public-split", "Normal (sigma 0.1)", "InfoNCE, L2", "box"),
        ("Demo2026Pixels", readouts["pixel-readout"], "self-reported", "none", "none (pixels)",
         "pixels"),
        ("Demo2026Oracle", readouts["true-latents"], "self-reported", "none", "none (true latents)",
         "latents"),
    ]
    for entry_id, result_file, status, positives, loss, space in rows:
        result = Result.load(result_file)
        if entry_path(entries, {"protocol": result.document["protocol"], "id": entry_id}).exists():
            continue
        entry = entry_from_result(result, entry_id, status=status,
                                  authors=["ident3d demo"], training_data="the demo's train split",
                                  positives=positives, loss=loss, model_space=space,
                                  footnote="ident3d demo: a few minutes on CPU, not a result")
        write_entry(entry, entries)
    return build(entries, folder / "LEADERBOARD.md", folder / "site" / "index.html")


def compare_on_track(smoke_result: Path) -> str:
    """Where the smoke baseline ranks among the committed entries of its track and protocol."""
    from ident3d.leaderboard.compare import report
    from ident3d.leaderboard.entries import ENTRIES_DIR, entry_from_result, load_entries
    from ident3d.results import Result

    result = Result.load(smoke_result)
    candidate = entry_from_result(result, "Demo2026Smoke", name="smoke baseline (this demo)",
                                  positives="Normal (sigma 0.1)", loss="InfoNCE, L2", model_space="box")
    return report(load_entries(ENTRIES_DIR), candidate, "the smoke baseline")


def heading(number: int, text: str) -> None:
    print(f"\n== {number}/{STEPS} {text}")


STEPS = 7


def run(args: argparse.Namespace) -> int:
    from ident3d.baselines.config import load_preset
    from ident3d.baselines.train import train
    from ident3d.render.settings import resolve_settings
    from ident3d.render.traverse import render_traversal
    from ident3d.results import Result

    out = check_output_folder(args.out, "--out").resolve()
    data, progress = out / "data", not args.quiet
    heading(1, "render the data (preview preset, 64 px) and pack it")
    render_data(data, args, progress)
    heading(2, "load positive pairs")
    show_pairs(data)

    heading(3, "train the smoke baseline (a small ResNet, InfoNCE with Normal positives)")
    config = load_preset("smoke", data=str(data), iterations=args.iterations)
    smoke_result = train(config, out / "runs" / "smoke", resume=True, progress=progress)
    heading(4, "evaluate it beside two references: the pixels and the true latents (the ceiling)")
    results = out / "results"
    readouts = reference_readouts(data, out / "models", results, progress)
    print(fill("Linear R² is the share of each latent's variance a linear read-out of the features "
               "recovers on held-out images; MCC, how well each latent correlates with one feature after "
               "matching them up (both 100% at best). The pixels are the floor an encoder should beat, "
               "the true latents the ceiling.", 100))
    for name, path in (("smoke baseline", smoke_result), *readouts.items()):
        print(f"\n{name} (ident3d-eval-v1)\n{Result.load(path).table()}")

    heading(5, "fresh draws: scores on test images rendered now, which no model can have seen")
    if args.fresh and not args.n_test:
        drawn = fresh_draws(data, out / "runs" / "smoke" / "encoder.pt2", out / "models", results,
                            args.fresh, args.workers, progress)
        for name, path in drawn.items():
            print(f"\n{name}\n" + "\n".join(Result.load(path).fresh_lines()))
    else:
        print("skipped: " + ("--fresh 0" if not args.fresh else "--n-test makes a custom test split, "
                             "and a fresh draw renders a track's test distribution"))

    heading(6, "leaderboards: the demo's own, and where the smoke baseline ranks on the CPU track")
    pages = demo_leaderboard(out / "leaderboard", smoke_result, readouts)
    print(f"\n{compare_on_track(smoke_result)}")
    heading(7, "latent-traversal figures")
    figures = [render_traversal(out / "figures" / f"traversal-{variant}.png", variant=variant, steps=7,
                                settings=resolve_settings("preview"), workers=args.workers, progress=progress)
               for variant in ("v2", "legacy")]
    print(f"\noutputs:\n  dataset      {data}\n  smoke run    {out / 'runs' / 'smoke'}\n"
          f"  results      {results} and {smoke_result}\n  leaderboard  {pages[0]}\n"
          f"  web page     {pages[1]}\n  figures      {figures[0]}\n               {figures[1]}")
    return 0
