from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ident3d.cli.arguments import positive_int

if TYPE_CHECKING:
    from ident3d.leaderboard.entries import Entry

HELP = ("build the leaderboard (LEADERBOARD.md and the web page), add a result, see where it ranks, or "
        "re-score an entry's model file")
EXAMPLE = ("ident3d leaderboard compare runs/normal-box/result.json\n"
           "  ident3d leaderboard add runs/nb/result.json --id Doe2026Contrastive_box --author 'J. Doe'\n"
           "  ident3d leaderboard add result.json --id Doe2026Contrastive --checkpoint encoder.pt2 "
           "--data data/3dident   # verified\n"
           "  ident3d leaderboard build [--check]\n"
           "  ident3d leaderboard rescore Ident2026CpuTrack_v2-pixels --checkpoint pixels.pt2 "
           "--data data/cpu-track\n"
           "  ident3d leaderboard export Ident2026CpuTrack_v2-supervised --format model-index")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = sub.add_parser("build", help="write LEADERBOARD.md and the site from the entries")
    build.add_argument("--check", action="store_true",
                       help="write nothing; exit 1 when the outputs differ from a fresh build")
    build.add_argument("--markdown", type=Path, help="the Markdown file (default: ./LEADERBOARD.md)")
    build.add_argument("--site", type=Path, help="the page (default: ./leaderboard/site/index.html)")
    build.add_argument("--overwrite", action="store_true",
                       help="replace a --markdown/--site file that an earlier build did not write")
    add = sub.add_parser("add", help="validate a result file and write it as a new entry")
    compare = sub.add_parser("compare", help="print where a result would rank; writes nothing")
    compare.add_argument("--wide", action="store_true",
                         help="every column of the leaderboard's table (default: rank, name, R², MCC, "
                              "status, fitting 100 columns)")
    export = sub.add_parser("export", help="print an entry as a model card's model-index or the Hub's "
                                           ".eval_results YAML")
    export.add_argument("entry_id", metavar="ID", help="the entry's id")
    export.add_argument("--format", default="model-index", choices=("model-index", "eval-results"),
                        help="model-index: YAML for a model card's header; eval-results: a file for the "
                             "model repository's .eval_results/ folder")
    export.add_argument("--hub-dataset", metavar="ID", help="the Hub id of the dataset the track was "
                                                            "published under (needed for eval-results)")
    rescore = sub.add_parser("rescore", help="score an entry's model file again and check every number the "
                                             "entry shows; writes nothing")
    rescore.add_argument("entry_id", metavar="ID", help="the entry's id")
    rescore.add_argument("--checkpoint", type=Path, required=True, help="the model file (.pt2)")
    rescore.add_argument("--data", type=Path, required=True, help="the dataset root the entry was scored on")
    rescore.add_argument("--out", type=Path, help="also write the entry around the fresh result (companion "
                                                  "sections such as DCI, this file's sha256) to this new "
                                                  "file; move it over the old entry to update the board")
    for q in (build, add, compare, export, rescore):
        q.add_argument("--entries", type=Path,
                       help="folder of entry files (default: leaderboard/entries of the clone you are in; "
                            "compare falls back to the entries shipped with ident3d)")
    for q in (add, compare):
        q.add_argument("result", type=Path, help="a result file from `ident3d evaluate`")
        q.add_argument("--track", help="the track whose table you mean; refused unless the result was "
                                       "scored on it (default: the result's own track)")
    add.add_argument("--id", required=True, help="<Author><Year><FirstWord>[_variant]")
    add.add_argument("--name", help="display name (default: the result's model name)")
    add.add_argument("--author", action="append", dest="authors", help="repeat for each author")
    add.add_argument("--paper", help="paper URL")
    add.add_argument("--code", help="code URL")
    add.add_argument("--training-data", default="unspecified", help="what the model was trained on")
    add.add_argument("--positives", default="unspecified", help="positive-pair type")
    add.add_argument("--loss", default="unspecified", help="training loss")
    add.add_argument("--space", dest="model_space", default="unspecified", help="model output space")
    add.add_argument("--footnote", help="one sentence shown under the table (budget, caveats)")
    add.add_argument("--seed-group", metavar="NAME",
                     help="the same NAME on each seed's entry of one method: one row (mean ± sd)")
    add.add_argument("--checkpoint", type=Path,
                     help="the model file: re-score it on --data and on a fresh draw of the track rendered "
                          "now, and mark the entry verified (docs/leaderboard.md)")
    add.add_argument("--data", type=Path, help="dataset root for re-scoring --checkpoint")
    add.add_argument("--fresh", type=positive_int, metavar="N",
                     help="images of the fresh draw for --checkpoint (default: the track's fresh_images)")


def _clone_entries(here: Path) -> Path:
    entries = here / "leaderboard" / "entries"
    if not entries.is_dir():
        from ident3d.errors import ResultError

        raise ResultError(f"{entries}: no leaderboard here. Fix: run this from the root of your ident3d "
                          "clone, or pass --entries DIR (and --markdown/--site for build).")
    return entries


def _entry(entries: Path, entry_id: str) -> Entry:
    from ident3d.leaderboard.entries import load_entries

    found = {e["id"]: e for e in load_entries(entries)}
    if entry_id not in found:
        from ident3d.errors import ResultError

        raise ResultError(f"{entries}: no entry {entry_id!r} ({len(found)} entries). Fix: pass an id listed "
                          "in LEADERBOARD.md or `ls leaderboard/entries`.")
    return found[entry_id]


def _track_id(name: str | None) -> str | None:
    """``NAME`` or ``NAME@VERSION`` as a full track id; custom keys pass as they are."""
    if name is None or name.startswith("custom:"):
        return name
    from ident3d.tracks import get_track

    return get_track(name).id


def run(args: argparse.Namespace) -> int:
    here = Path.cwd()
    if args.action in ("compare", "export", "rescore"):
        from ident3d.leaderboard.entries import ENTRIES_DIR

        local = here / "leaderboard" / "entries"
        args.entries = args.entries or (local if local.is_dir() else ENTRIES_DIR)
    else:  # add and build write: only where the user says, or into the clone they are in
        args.entries = args.entries or _clone_entries(here)
    return ACTIONS[args.action](args)


def _build(args: argparse.Namespace) -> int:
    from ident3d.leaderboard.build import build, stale
    from ident3d.outputs import check_not_an_input

    here = Path.cwd()
    args.markdown = args.markdown or here / "LEADERBOARD.md"
    args.site = args.site or here / "leaderboard" / "site" / "index.html"
    if args.check:
        outdated = stale(args.entries, args.markdown, args.site)
        for path in outdated:
            print(f"stale: {path} (run `ident3d leaderboard build`)")
        return 1 if outdated else 0
    check_not_an_input(args.markdown, "--markdown", (args.entries,))
    check_not_an_input(args.site, "--site", (args.entries,))
    for path in build(args.entries, args.markdown, args.site, overwrite=args.overwrite):
        print(path)
    return 0


def _export(args: argparse.Namespace) -> int:
    from ident3d.leaderboard.hub_export import export

    print(export(_entry(args.entries, args.entry_id), args.format, args.hub_dataset), end="")
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from ident3d.leaderboard.entries import rescore_entry

    if args.out is not None:
        from ident3d.outputs import OutputError, check_not_an_input

        for given in (args.entries, args.checkpoint, args.data):
            check_not_an_input(args.out, "--out", (given,))
        if args.out.exists():
            raise OutputError(f"--out {args.out}: already exists; this command never overwrites a file. "
                              "Fix: choose a new file name.")
    checked = rescore_entry(_entry(args.entries, args.entry_id), args.checkpoint, args.data)
    print(f"{args.entry_id}: every metric the entry shows matches the re-scored {args.checkpoint} on "
          f"{args.data}; " + ("the file is the one the entry was verified with (same sha256)"
                             if checked.same_file else "the file's bytes differ from the one the entry "
                             "was verified with (same scores, different sha256: exported again)"))
    if args.out is not None:
        from ident3d import atomic

        atomic.write_json(args.out, checked.entry.document)
        print(f"{args.out}: the entry around the fresh result")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ident3d.leaderboard.compare import report
    from ident3d.leaderboard.entries import entry_from_result, load_entries
    from ident3d.results import Result

    result = Result.load(args.result)
    candidate = entry_from_result(result, "Candidate0000Result", track=_track_id(args.track))
    print(report(load_entries(args.entries), candidate, result.document["model"]["name"], wide=args.wide))
    return 0


def _add(args: argparse.Namespace) -> int:
    from ident3d.leaderboard.entries import entry_from_result, rescore, track_of, write_entry
    from ident3d.results import Result
    from ident3d.tracks import get_track

    result = Result.load(args.result)
    track = _track_id(args.track)
    status = "self-reported"
    if args.checkpoint is not None:
        if args.data is None:
            from ident3d.errors import ResultError

            raise ResultError("--checkpoint needs --data ROOT (the dataset to re-score it on).")
        drawable = get_track(track_of(result.document)) if not track_of(result.document).startswith(
            "custom:") else None
        fresh = (args.fresh or "track") if drawable and drawable.source == "render" else None
        result = rescore(result, args.checkpoint, args.data, fresh=fresh)
        status = "verified" if fresh else "public-split"
        if fresh:
            print("\n".join(result.fresh_lines()))
        else:
            print("no fresh draw: the result is not on a rendered track's split, so the entry is "
                  "public-split (scored from the model file on the public split only)")
    entry = entry_from_result(result, args.id, status=status, name=args.name, authors=args.authors,
                              paper=args.paper, code=args.code, training_data=args.training_data,
                              positives=args.positives, loss=args.loss, model_space=args.model_space,
                              footnote=args.footnote, track=track, seed_group=args.seed_group)
    print(write_entry(entry, args.entries))
    print("now run `ident3d leaderboard build` to update LEADERBOARD.md and the page")
    return 0


ACTIONS = {"build": _build, "export": _export, "rescore": _rescore, "compare": _compare, "add": _add}
