"""How often the memorisation flag fires: A/A splits no model saw, and memorisers against them.

    python -m ident3d.baselines.flag_calibration DATA OUT --model pixels=PIXELS.pt2 ... \
        --memoriser lookup=LOOKUP.pt2 --memoriser memoriser-10=PARTIAL.pt2 [--splits 500]

DATA holds the CPU track's public test split, on which each protocol fits its read-outs. OUT holds
one more set of the track's test distribution (``AA_IMAGES`` images, rendered once from a seed drawn
from OS entropy and recorded, kept for later models; a set whose folder is gone is rendered again
from its seed). No read-out is fitted on it and no model trained on it.

- An honest model's false alarms (A/A): each split draws two disjoint random subsets of that set,
  one the size of the protocol's public held-out rows and one the size of a fresh draw, and puts
  them through the evaluator's test (``ident3d.gap_test``: the same read-outs, statistic, permutations
  and Holm adjustment). Both parts are unseen by construction, so every flag is a false alarm.
- A memoriser's power: each split compares the real public held-out rows, which it stored, with a
  random fresh-draw-sized subset of the set.

Splits of one set share its images, so they are not independent draws of the data; they are
independent relabellings, which is what the test's level is a statement about (for any data, a
random relabelling is flagged with probability at most the level). What every (model, protocol)
gave goes into the committed ``baselines/flag_calibration.json`` (resumable: a measured pair is not
measured again); ``python -m ident3d.baselines.reports`` renders the table in docs/submissions.md and
the rate the evaluator quotes (``ident3d/flag_rate.json``) from that file alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ident3d import atomic
from ident3d.errors import Ident3dError
from ident3d.readers import read_json

RECORD = Path(__file__).resolve().parent / "flag_calibration.json"
KINDS = ("honest", "memoriser")
AA_IMAGES = 5000  # at least the larger held-out set (2,500 under ident3d-eval-v1) plus a draw of 2,000
SCHEMA = "ident3d-flag-calibration/2"


def _aa_set(record: dict[str, Any], out: Path, workers: int):
    from ident3d import fresh
    from ident3d.datasets import ThreeDIdent
    from ident3d.tracks import get_track

    folder = out / "aa"
    if not (folder / "test" / "manifest.json").exists():  # new, or on a machine that is gone: same images
        fresh.render_draw(get_track(record["track"]), record["aa_images"], record["aa_seed"], folder, workers)
    return ThreeDIdent(folder, "test")


def _splits(readout, held_out, aa, n_fresh: int, kind: str, splits: int, seed: int) -> dict[str, Any]:
    """``splits`` tests of one model under one protocol (module docstring); the flags and mean gaps."""
    import numpy as np

    from ident3d import gap_test

    statistics, public = readout.row_statistics(*aa), readout.row_statistics(*held_out)
    rng = np.random.default_rng([seed, 3])
    flags, gaps = 0, {"linear_r2": 0.0, "mcc_pearson": 0.0}
    for _ in range(splits):
        order = rng.permutation(len(statistics))
        if kind == "honest":
            a, b = statistics[order[:len(public)]], statistics[order[len(public):len(public) + n_fresh]]
        else:
            a, b = public, statistics[order[:n_fresh]]
        tested = gap_test.permutation_p(a, b, aa[0].shape[1], seed=int(rng.integers(2**63)))
        adjusted = gap_test.holm([tested[m]["p"] for m in gaps])
        flags += min(adjusted) <= gap_test.LEVEL
        for m in gaps:
            gaps[m] += tested[m]["statistic_gap"] / splits
    return {"splits": splits, "flagged": int(flags), "n_public": len(public), "n_fresh": n_fresh,
            "mean_gap": gaps}


def measure(data: Path, out: Path, models: dict[str, tuple[Path, str]], splits: int,
            record_path: Path = RECORD, workers: int = 2) -> dict[str, Any]:
    """Render the A/A set if missing, measure every (model, protocol) not yet measured, write the record."""
    import numpy as np
    import torch

    from ident3d import fresh, gap_test
    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import features, score_features
    from ident3d.protocols import get_protocol
    from ident3d.submissions import load_submission
    from ident3d.tracks import get_track, identify

    public = ThreeDIdent(data, "test")
    track = get_track(identify(public.layout, public.latents, public.manifest))
    record = read_json(record_path, Ident3dError, "restore it from git") if record_path.exists() else {}
    if record.get("schema") != SCHEMA:  # the old test's record is git history; this one starts anew
        record = {"schema": SCHEMA, "track": track.id, "n_fresh": track.fresh_images, "aa_images": AA_IMAGES,
                  "aa_seed": fresh.draw_seed(), "test": gap_test.described(), "models": {}}
        atomic.write_json(record_path, record)
    if record["track"] != track.id:
        raise Ident3dError(f"{data}: track {track.id}, the record {record_path} measures {record['track']}. "
                           "Fix: pass the data of the record's track.")
    for name, (path, kind) in models.items():  # every model checked before anything is written
        measured = record["models"].get(name)
        if measured and (measured["sha256"] != atomic.sha256_file(path) or measured["kind"] != kind):
            raise Ident3dError(f"{path}: the record measured another {measured['kind']} model as {name!r} "
                               f"(sha256 {measured['sha256'][:12]}...). Fix: pass that model file, or "
                               "give this one a new name.")
    aa = _aa_set(record, out, workers)
    columns = public.variant_spec.continuous_columns
    z_aa = aa.latents[:, columns].astype(np.float64)
    for name, (path, kind) in models.items():
        measured = record["models"].setdefault(name, {"kind": kind, "sha256": atomic.sha256_file(path),
                                                      "protocols": {}})
        todo = [p for p in track.protocols if measured["protocols"].get(p, {}).get("splits", 0) < splits]
        if not todo:
            continue
        sub = load_submission(path)
        try:
            h, h_aa = (features(sub, split, torch.device("cpu"), 256, False) for split in (public, aa))
        finally:
            sub.close()
        for protocol in todo:
            scored = score_features(str(path), public, h, {}, {}, get_protocol(protocol), False)
            drawn = (z_aa, scored.standardise(h_aa, str(path)))
            seed = record["aa_seed"] + sum(map(ord, name + protocol))
            measured["protocols"][protocol] = _splits(scored.readout, scored.held_out, drawn,
                                                      record["n_fresh"], kind, splits, seed)
            atomic.write_json(record_path, record)
    return record


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    """The exact 95% interval of a rate from ``hits`` of ``n``."""
    from scipy.stats import beta

    low = 0.0 if hits == 0 else float(beta.ppf(0.025, hits, n - hits + 1))
    high = 1.0 if hits == n else float(beta.ppf(0.975, hits + 1, n - hits))
    return low, high


def rates(record: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per protocol the honest models' false alarms (flagged, splits), pooled over the models."""
    pooled: dict[str, list[int]] = {}
    for model in record["models"].values():
        if model["kind"] == "honest":
            for protocol, row in model["protocols"].items():
                tally = pooled.setdefault(protocol, [0, 0])
                tally[0] += row["flagged"]
                tally[1] += row["splits"]
    return {protocol: (hits, n) for protocol, (hits, n) in sorted(pooled.items())}


def markdown(record_path: Path = RECORD) -> str:
    """The docs block: per model and protocol how often the test flagged, then each protocol's pooled
    false-alarm rate and each memoriser's power, with exact intervals, and the goal's verdict."""
    record = read_json(record_path, Ident3dError, "restore it from git")
    test = record["test"]
    lines = [f"The test (`{test['name']}`: one-sided permutation p-values of clipped-per-latent linear R² "
             f"and Pearson MCC, {test['permutations']:,} relabellings, Holm-adjusted, flagged at "
             f"{100 * test['level']:g}%) on random splits of one set of {record['aa_images']:,} images of "
             f"`{record['track']}` that no read-out was fitted on and no model trained on "
             "(`python -m ident3d.baselines.flag_calibration`; baselines/flag_calibration.json). Honest "
             "models: two disjoint subsets of the set, sized as the protocol's public held-out rows and "
             f"as a fresh draw ({record['n_fresh']:,}); memorisers: their real public held-out rows "
             "against a draw-sized subset. Rates with exact (Clopper-Pearson) 95% intervals; gaps are "
             "the test's statistic, public minus fresh, in points.", "",
             "| model | kind | protocol | rows (public / fresh) | splits | flagged | rate | mean R² gap "
             "| mean MCC gap |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for name, model in sorted(record["models"].items(), key=lambda item: (item[1]["kind"], item[0])):
        for protocol, row in sorted(model["protocols"].items()):
            gaps = " | ".join(f"{100 * row['mean_gap'][m]:+.2f}" for m in ("linear_r2", "mcc_pearson"))
            sizes = f"{row['n_public']:,} / {row['n_fresh']:,}"
            lines.append(f"| {name} | {model['kind']} | {protocol} | {sizes} | {row['splits']} | "
                         f"{row['flagged']} | {_rate(row['flagged'], row['splits'])} | {gaps} |")
    lines.append("")
    for protocol, (hits, n) in rates(record).items():
        high = clopper_pearson(hits, n)[1] if n else 1.0
        verdict = ("meets the goal (at most 5%, the interval's upper end at most 7%)"
                   if n and hits / n <= 0.05 and high <= 0.07 else "does not meet the goal (at most 5%, "
                   "the interval's upper end at most 7%)")
        lines.append(f"- {protocol}: false alarms on honest models {_rate(hits, n)}: {verdict}.")
    for name, model in sorted(record["models"].items()):
        if model["kind"] == "memoriser":
            power = "; ".join(f"{protocol} {_rate(row['flagged'], row['splits'])}"
                              for protocol, row in sorted(model["protocols"].items()))
            lines.append(f"- power against {name}: {power}.")
    return "\n".join(lines)


def rate_file(record_path: Path = RECORD) -> str:
    """``ident3d/flag_rate.json``: the measured false-alarm rate per protocol the evaluator says beside
    the flag (the installed package reads this file, never the record)."""
    import json

    record = read_json(record_path, Ident3dError, "restore it from git")
    out = {"test": record["test"]["name"], "level": record["test"]["level"], "protocols": {}}
    for protocol, (hits, n) in rates(record).items():
        low, high = clopper_pearson(hits, n)
        out["protocols"][protocol] = {"flagged": hits, "splits": n, "ci95": [round(low, 4), round(high, 4)]}
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def _rate(hits: int, n: int) -> str:
    if n == 0:
        return "–"
    low, high = clopper_pearson(hits, n)
    return f"{hits}/{n} = {100 * hits / n:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def _model(text: str, kind: str) -> tuple[str, tuple[Path, str]]:
    name, sep, path = text.partition("=")
    if not sep or not name or not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=FILE.pt2 with an existing file")
    return name, (Path(path), kind)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="dataset root with the track's public test split")
    parser.add_argument("out", type=Path, help="folder for the A/A set (kept: later models use the same set)")
    parser.add_argument("--model", action="append", default=[], type=lambda t: _model(t, "honest"),
                        metavar="NAME=FILE", help="an honest model (repeat)")
    parser.add_argument("--memoriser", action="append", default=[], type=lambda t: _model(t, "memoriser"),
                        metavar="NAME=FILE", help="a memorising model (repeat)")
    parser.add_argument("--splits", type=int, default=500, help="splits per model and protocol (default 500)")
    parser.add_argument("--record", type=Path, default=RECORD, help="the record to extend")
    args = parser.parse_args(argv)
    try:
        measure(args.data, args.out, dict(args.model + args.memoriser), args.splits, args.record)
    except Ident3dError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(markdown(args.record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
