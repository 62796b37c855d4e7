from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ident3d.cli.arguments import positive_int

if TYPE_CHECKING:
    from ident3d.leaderboard.entries import Entry
    from ident3d.leaderboard.verification import Signer
    from ident3d.results import Result
    from ident3d.tracks import Track

HELP = ("build the leaderboard (LEADERBOARD.md and the web page), add a result, see where it ranks, or "
        "re-score an entry's model file")
EXAMPLE = ("ident3d leaderboard compare runs/normal-box/result.json\n"
           "  ident3d leaderboard add runs/nb/result.json --id Doe2026Contrastive_box --author 'J. Doe'\n"
           "  ident3d leaderboard add result.json --id Doe2026Contrastive --checkpoint encoder.pt2 "
           "--data data/3dident   # verified\n"
           "  ident3d leaderboard build\n"
           "  ident3d leaderboard build --check   # writes nothing; exit 1: stale, or an unverified claim\n"
           "  ident3d leaderboard rescore ident3d-eval-v1/Ident2026CpuTrack_v2-pixels "
           "--checkpoint pixels.pt2 --data data/cpu-track\n"
           "  ident3d leaderboard export ident3d-eval-v1/Ident2026CpuTrack_v2-supervised "
           "--format model-index")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = sub.add_parser("build", help="write LEADERBOARD.md and the site from the entries")
    build.add_argument("--check", action="store_true",
                       help="write nothing; exit 1 when the outputs differ from a fresh build or a row says "
                            "verified without a valid signature")
    build.add_argument("--base", metavar="REF",
                       help="check (implies --check) trusting only the keys of git ref REF's keyring (the "
                            "branch a change goes into, e.g. origin/main): a change that adds or edits a "
                            "key together with entries it signs fails, naming the key")
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
    export.add_argument("entry_id", metavar="ID", help="the entry's id (PROTOCOL/ID when several protocols "
                                                       "have it)")
    export.add_argument("--format", default="model-index", choices=("model-index", "eval-results"),
                        help="model-index: YAML for a model card's header; eval-results: a file for the "
                             "model repository's .eval_results/ folder")
    export.add_argument("--hub-dataset", metavar="ID", help="the Hub id of the dataset the track was "
                                                            "published under (needed for eval-results)")
    rescore = sub.add_parser("rescore", help="score an entry's model file again and check every number the "
                                             "entry shows; writes nothing")
    rescore.add_argument("entry_id", metavar="ID", help="the entry's id (PROTOCOL/ID when several protocols "
                                                        "have it)")
    rescore.add_argument("--checkpoint", type=Path, required=True, help="the model file (.pt2)")
    rescore.add_argument("--data", type=Path, required=True, help="the dataset root the entry was scored on")
    rescore.add_argument("--out", type=Path, help="also write the entry around the fresh result (companion "
                                                  "sections such as DCI, this file's sha256) to this new "
                                                  "file; move it over the old entry to update the board")
    keyring = sub.add_parser("keyring", help="list the keyring, or (maintainers) add or revoke a key")
    actions = keyring.add_subparsers(dest="keyring_action", required=True, metavar="KEYRING_ACTION")
    listing = actions.add_parser("list", help="every key: name, holder, validity, fingerprint")
    new = actions.add_parser("add", help="add a verifier's public key with its holder (maintainers: the "
                                         "change must land before entries it signs)")
    new.add_argument("name", help="the key's name, as rows it signs show it (lower-case, digits, hyphens)")
    new.add_argument("--holder", required=True, help="who holds the private key: a person or a team")
    new.add_argument("--role", required=True, choices=("person", "machine"),
                     help="a person's own key, or a machine role's (a verifier server, a CI runner)")
    new.add_argument("--kept", required=True, metavar="WHERE",
                     help="where the private key is kept (a hardware token, a server's config folder)")
    new.add_argument("--public-key", metavar="BASE64",
                     help="the Ed25519 public key (default: the key NAME in this machine's "
                          "$XDG_CONFIG_HOME/ident3d/verifiers, made there if missing)")
    new.add_argument("--expires", metavar="YYYY-MM-DD", help="the last day records it signs count")
    revoke = actions.add_parser("revoke", help="revoke a key whose private half may be in other hands: "
                                               "every row it signed becomes an unverified claim")
    revoke.add_argument("name", help="the key's name")
    revoke.add_argument("--reason", required=True, help="why (shown beside every row it signed)")
    revoke.add_argument("--date", metavar="YYYY-MM-DD", help="the day of revocation (default: today)")
    for q in (build, add, compare, export, rescore, listing, new, revoke):
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
                     help="images of the fresh draw for --checkpoint (default: the track's fresh_images; at "
                          "least its fresh_min)")
    add.add_argument("--verifier", metavar="NAME",
                     help="your key that signs a verified entry: "
                          "$XDG_CONFIG_HOME/ident3d/verifiers/NAME.key, made on first use and never "
                          "written into the repository's keyring (default: $IDENT3D_VERIFIER, else your "
                          "login name)")
    add.add_argument("--replace", metavar="ID",
                     help="replace entry ID of the result's protocol (one model file has one entry per "
                          "table: a file already on the board is refused otherwise)")


def _clone_entries(here: Path) -> Path:
    entries = here / "leaderboard" / "entries"
    if not entries.is_dir():
        from ident3d.errors import ResultError

        raise ResultError(f"{entries}: no leaderboard here. Fix: run this from the root of your ident3d "
                          "clone, or pass --entries DIR (and --markdown/--site for build).")
    return entries


def _entry(entries: Path, name: str) -> Entry:
    from ident3d.leaderboard.entries import find_entry, load_entries

    return find_entry(load_entries(entries), name, entries)


def _track_id(name: str | None) -> str | None:
    """``NAME`` or ``NAME@VERSION`` as a full track id; custom keys pass as they are."""
    if name is None or name.startswith("custom:"):
        return name
    from ident3d.tracks import get_track

    return get_track(name).id


def run(args: argparse.Namespace) -> int:
    here = Path.cwd()
    if args.action in ("compare", "export", "rescore") or getattr(args, "keyring_action", None) == "list":
        from ident3d.leaderboard.entries import ENTRIES_DIR

        local = here / "leaderboard" / "entries"
        args.entries = args.entries or (local if local.is_dir() else ENTRIES_DIR)
    else:  # add and build write: only where the user says, or into the clone they are in
        args.entries = args.entries or _clone_entries(here)
    return ACTIONS[args.action](args)


def _build(args: argparse.Namespace) -> int:
    from ident3d.leaderboard.build import build, stale
    from ident3d.leaderboard.entries import load_entries, twins
    from ident3d.leaderboard.ranking import claim_problem, signer
    from ident3d.outputs import check_not_an_input

    here = Path.cwd()
    args.markdown = args.markdown or here / "LEADERBOARD.md"
    args.site = args.site or here / "leaderboard" / "site" / "index.html"
    entries = load_entries(args.entries)
    for entry in entries:  # adding a key or a verified row is a visible change
        if signer(entry) and not args.quiet:
            print(f"verified: {entry.key}, signed by key {signer(entry)!r}")
    claims = [f"error: {entry.key}: says verified, but {claim_problem(entry)}. Fix: verify it with "
              "`ident3d leaderboard add --checkpoint FILE --data ROOT --replace ID`, or set its status to "
              "public-split" for entry in entries if claim_problem(entry)]
    claims += [f"error: {a.key} and {b['id']}: equal scores on one split and protocol (to within the "
               "board's rounding): one model, one row, and a re-export is the same model. Fix: remove one, "
               "or give it an archived note" for a, b in twins(entries)]
    if args.check or args.base is not None:
        outdated = stale(args.entries, args.markdown, args.site)
        for path in outdated:
            print(f"stale: {path} (run `ident3d leaderboard build`)")
        for line in claims:
            print(line, file=sys.stderr)
        judged = _judge_against_base(entries, args) if args.base is not None else []
        return 1 if outdated or claims or judged else 0
    check_not_an_input(args.markdown, "--markdown", (args.entries,))
    check_not_an_input(args.site, "--site", (args.entries,))
    for line in claims:  # shown on the board as unverified claims, with the reason
        print(line.replace("error: ", "warning: ", 1), file=sys.stderr)
    for path in build(args.entries, args.markdown, args.site, overwrite=args.overwrite):
        print(path)
    return 0


def _judge_against_base(entries: list[Entry], args: argparse.Namespace) -> list[str]:
    """Print the notices and the problems of judging the change against ``--base``'s keyring."""
    from ident3d.leaderboard.base_check import judge, keyring_at
    from ident3d.leaderboard.keyring import keyring_folder, read_keyring

    folder = keyring_folder(args.entries)
    judgement = judge(entries, read_keyring(folder), keyring_at(args.base, folder), args.base)
    for line in judgement.notices:
        print(f"notice: {line}")
    for line in judgement.problems:
        print(f"error: {line}", file=sys.stderr)
    return judgement.problems


def _keyring(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from ident3d.leaderboard.keyring import Key, add_key, keyring_folder, read_keyring, revoke_key

    folder = keyring_folder(args.entries)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    if args.keyring_action == "list":
        for key in read_keyring(folder).keys:
            valid = f"{key.added} to {key.expires or 'no expiry'}"
            revoked = f"; REVOKED {key.revoked['date']}: {key.revoked['reason']}" if key.revoked else ""
            print(f"{key.name}: {key.who} ({key.role}; private key: {key.private_key}); valid {valid}"
                  f"{revoked}; fingerprint {key.fingerprint[:16]}")
        return 0
    if args.keyring_action == "revoke":
        print(revoke_key(folder, args.name, args.reason, args.date or today))
        print("every row this key signed is now an unverified claim; a maintainer re-verifies them with "
              "another key (`ident3d leaderboard add --checkpoint FILE --data ROOT --replace ID`)")
        return 0
    public = args.public_key
    if public is None:
        from ident3d.leaderboard.verification import Signer

        public = Signer.load_or_create(args.name).public_key()
    path = add_key(folder, Key(args.name, public, args.holder, args.role, args.kept, today, args.expires))
    print(f"{path}: key {args.name!r} of {args.holder}; commit it on its own: `ident3d leaderboard build "
          "--check --base REF` fails a change that adds a key together with entries it signs")
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
    entry = _entry(args.entries, args.entry_id)
    checked = rescore_entry(entry, args.checkpoint, args.data, progress=not args.quiet)
    drawn = (entry["result"] or {}).get("fresh")
    redrawn = (f" and on its fresh draw re-rendered from seed {drawn['seed']} ({drawn['n']:,} images)"
               if drawn else "")
    print(f"{entry.key}: every number the entry shows matches the re-scored {args.checkpoint} on "
          f"{args.data}{redrawn}; " + ("the file is the one the entry was scored with (same sha256)"
                                       if checked.same_file else "the file's bytes differ from the one the "
                                       "entry was scored with (same scores, different sha256: exported "
                                       "again)"))
    if args.out is not None:
        from ident3d import atomic

        atomic.write_json(args.out, checked.entry.document)
        print(f"{args.out}: the entry around the re-scored result"
              + (" (public-split: a verified row is one the verifier signs; `leaderboard add --checkpoint "
                 f"--replace {entry['id']}` verifies it anew)" if entry["status"] == "verified" else ""))
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
    from ident3d.leaderboard.entries import (
        entry_from_result,
        find_entry,
        load_entries,
        rescore,
        track_of,
        write_entry,
    )
    from ident3d.results import Result

    result = Result.load(args.result)
    track = _track_id(args.track)
    board = load_entries(args.entries)
    if args.replace is not None:  # an entry of the result's protocol, or one error line naming it
        find_entry(board, f"{result.document['protocol']}/{args.replace}", args.entries)
    status, signer, drawable = "self-reported", None, None
    if args.checkpoint is not None:
        from ident3d.tracks import get_track

        if args.data is None:
            from ident3d.errors import ResultError

            raise ResultError("--checkpoint needs --data ROOT (the dataset to re-score it on).")
        scored_on = track_of(result.document)
        drawable = get_track(scored_on) if not scored_on.startswith("custom:") else None
        drawable = drawable if drawable and drawable.source == "render" else None
        _refuse_small_draw(drawable, args.fresh)
        _refuse_known_model(board, args.checkpoint, (track or scored_on, result.document["protocol"]),
                            args.replace)
        _refuse_twin(board, result, args.id, track or scored_on, args.replace)
        signer = _signer(args) if drawable else None  # a broken key fails before minutes of scoring
        fresh = (args.fresh or "track") if drawable else None
        public = {k: v for k, v in result.document.items() if k != "fresh"}  # a draw the submitter saw
        result = rescore(Result.parse(public, str(args.result)), args.checkpoint, args.data, fresh=fresh,
                         progress=not args.quiet)
        status = "verified" if drawable else "public-split"
        if signer is not None:
            print("\n".join(result.fresh_lines()))
        else:
            print("no fresh draw: the result is not on a rendered track's split, so the entry is "
                  "public-split (scored from the model file on the public split only)")
    else:
        model = result.document["model"]["sha256"]
        _refuse_known_sha(board, model, (track or track_of(result.document), result.document["protocol"]),
                          args.replace, f"{args.result}'s model")
        _refuse_twin(board, result, args.id, track or track_of(result.document), args.replace)
    entry = entry_from_result(result, args.id, status=status, name=args.name, authors=args.authors,
                              paper=args.paper, code=args.code, training_data=args.training_data,
                              positives=args.positives, loss=args.loss, model_space=args.model_space,
                              footnote=args.footnote, track=track, seed_group=args.seed_group)
    if signer is not None:
        entry = _sign(signer, entry, args.entries)
    print(write_entry(entry, args.entries, replace=args.replace))
    print("now run `ident3d leaderboard build` to update LEADERBOARD.md and the page")
    return 0


def _refuse_twin(board: list[Entry], result: Result, entry_id: str, table: str, replace: str | None) -> None:
    from ident3d.leaderboard.entries import twin_of
    from ident3d.protocols import per_latent_metrics

    document = result.document
    candidate = {"id": entry_id, "dataset": table, "protocol": document["protocol"], "result": document,
                 "metrics": {k: document["metrics"].get(k) for k in per_latent_metrics()}}
    twin = twin_of(board, candidate, replace)
    if twin is not None:
        from ident3d.errors import ResultError

        raise ResultError(f"{twin.key}: scores what this result scores on {table} (every metric and latent "
                          "within the board's rounding); one model has one row, and a re-export (renamed "
                          "parameters, a scale folded in) is the same model. Fix: pass --replace "
                          f"{twin['id']} to replace that entry, or submit another model.")


def _refuse_small_draw(track: Track | None, fresh: int | None) -> None:
    smallest = track.fresh_min or 0 if track is not None else 0
    if track is not None and fresh is not None and fresh < smallest:
        from ident3d.errors import ResultError

        raise ResultError(f"--fresh {fresh}: a verified draw of {track.id} has at least {smallest:,} "
                          "images (on fewer, MCC is biased upwards: docs/submissions.md, \"How large a "
                          f"draw\"). Fix: pass --fresh {smallest} or more, or leave it out.")


def _refuse_known_model(board: list[Entry], checkpoint: Path, table: tuple[str, str],
                        replace: str | None) -> None:
    from ident3d import atomic
    from ident3d.submission_files import submission_kind

    submission_kind(checkpoint)  # a regular model file of a kind the evaluator reads, or one error line
    _refuse_known_sha(board, atomic.sha256_file(checkpoint), table, replace, f"--checkpoint {checkpoint}")


def _refuse_known_sha(board: list[Entry], sha256: str, table: tuple[str, str], replace: str | None,
                      what: str) -> None:
    from ident3d.leaderboard.entries import same_model

    taken = [i for i in same_model(board, sha256, table) if i != replace]
    if taken:
        from ident3d.errors import ResultError

        raise ResultError(f"{what}: this model file (sha256 {sha256[:12]}…) is already entry {taken[0]} of "
                          f"{table[0]} · {table[1]}; one model file has one entry per table. Fix: pass "
                          f"--replace {taken[0]} to replace that entry, or submit another model.")


def _signer(args: argparse.Namespace) -> Signer:
    from ident3d.leaderboard.verification import Signer, default_key_name

    return Signer.load_or_create(args.verifier or default_key_name())


def _sign(signer: Signer, entry: Entry, entries: Path) -> Entry:
    from ident3d.leaderboard.entries import Entry
    from ident3d.leaderboard.keyring import keyring_folder, read_keyring
    from ident3d.leaderboard.verification import config_folder

    signed = Entry.parse(signer.sign_entry(entry.document), f"entry {entry['id']}")
    where = config_folder() / f"{signer.name}.key"
    print(f"signed by your key {signer.name!r} ({where}); ident3d never writes it into a keyring.")
    if read_keyring(keyring_folder(entries)).by_fingerprint(signer.fingerprint) is None:
        print("A row signed by your own key is verified on your copy only, and only once you add your key "
              "to your copy's keyring (`ident3d leaderboard keyring add ...`); until then it shows as an "
              "unverified claim. On the public board a maintainer re-verifies the model file with a key of "
              "the keyring: open a pull request with the entry and the model file.")
    return signed


ACTIONS = {"build": _build, "export": _export, "rescore": _rescore, "compare": _compare, "add": _add,
           "keyring": _keyring}
