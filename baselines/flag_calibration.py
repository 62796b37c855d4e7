"""How often the memorisation flag fires: honest models and memorisers scored on independent fresh draws.

    python -m ident3d.baselines.flag_calibration DATA OUT --model pixels=PIXELS.pt2 \
        --memoriser lookup=LOOKUP.pt2 --memoriser memoriser-10=PARTIAL.pt2 [--draws 5]

DATA holds the CPU track's public test split. Each draw is rendered once into OUT/draws/<k> (from a
seed drawn from OS entropy, recorded) and kept, so a model trained later is scored on the same draws
(a draw whose folder is gone is rendered again from its recorded seed: the same images);
each model's public split is encoded and scored once per protocol, each draw encoded once. What every
(model, protocol, draw) gave, the memorisation gap of each metric with its interval and whether the
flag fired, goes into the committed ``baselines/flag_calibration.json`` (resumable: what it holds is
not measured again). ``python -m ident3d.baselines.reports`` renders the table in docs/submissions.md
from that file alone. Honest models are the baselines (their false alarms); memorisers are
``python -m ident3d.baselines.lookup`` tables, whole or partial (the flag's power).
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


def measure(data: Path, out: Path, models: dict[str, tuple[Path, str]], draws: int,
            record_path: Path = RECORD, workers: int = 2) -> dict[str, Any]:
    """Render the missing draws, score every model not yet measured on every draw, write the record."""
    import numpy as np
    import torch

    from ident3d import fresh
    from ident3d.datasets import ThreeDIdent
    from ident3d.evaluation import features, score_features
    from ident3d.protocols import get_protocol
    from ident3d.submissions import load_submission
    from ident3d.tracks import get_track, identify

    public = ThreeDIdent(data, "test")
    track = get_track(identify(public.layout, public.latents, public.manifest))
    record = read_json(record_path, Ident3dError, "restore it from git") if record_path.exists() else {
        "track": track.id, "n": track.fresh_images, "draws": [], "models": {}}
    if record["track"] != track.id:
        raise Ident3dError(f"{data}: track {track.id}, the record {record_path} measures {record['track']}. "
                           "Fix: pass the data of the record's track.")
    for k in range(draws):
        if k == len(record["draws"]):
            record["draws"].append({"seed": fresh.draw_seed()})
            atomic.write_json(record_path, record)
        folder = out / "draws" / str(k)
        if not (folder / "test" / "manifest.json").exists():  # new, or rendered on a machine that is gone:
            fresh.render_draw(track, record["n"], record["draws"][k]["seed"], folder, workers)  # same images
    sets = [ThreeDIdent(out / "draws" / str(k), "test") for k in range(draws)]
    columns = public.variant_spec.continuous_columns
    for name, (path, kind) in models.items():
        measured = record["models"].setdefault(name, {"kind": kind, "sha256": atomic.sha256_file(path),
                                                      "protocols": {}})
        if measured["sha256"] != atomic.sha256_file(path) or measured["kind"] != kind:
            raise Ident3dError(f"{path}: the record measured another {measured['kind']} model as {name!r} "
                               f"(sha256 {measured['sha256'][:12]}...). Fix: pass that model file, or "
                               "give this one a new name.")
        todo = {p: measured["protocols"].get(p, []) for p in track.protocols}
        if all(len(rows) >= draws for rows in todo.values()):
            continue
        sub = load_submission(path)
        try:
            device = torch.device("cpu")
            h = features(sub, public, device, 256, False)
            scored = {p: score_features(str(path), public, h, {}, {}, get_protocol(p), False) for p in todo}
            for k in range(min(len(rows) for rows in todo.values()), draws):
                z = sets[k].latents[:, columns].astype(np.float64)
                raw = features(sub, sets[k], device, 256, False)
                for protocol, rows in todo.items():
                    if len(rows) > k:
                        continue
                    split = scored[protocol]
                    drawn = (z, split.standardise(raw, str(path)))
                    seed = record["draws"][k]["seed"]
                    gap = fresh.memorisation_gap(split.readout, split.held_out, drawn, seed)
                    rows.append({"draw": k, "gap": gap, "flagged": fresh.flagged(gap)})
                    measured["protocols"][protocol] = rows
                atomic.write_json(record_path, record)
        finally:
            sub.close()
    return record


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    """The exact 95% interval of a rate from ``hits`` of ``n``."""
    from scipy.stats import beta

    low = 0.0 if hits == 0 else float(beta.ppf(0.025, hits, n - hits + 1))
    high = 1.0 if hits == n else float(beta.ppf(0.975, hits + 1, n - hits))
    return low, high


def markdown(record_path: Path = RECORD) -> str:
    """The docs table: per model and protocol how often the flag fired and the mean gaps, then the
    pooled false-alarm rate of the honest models and each memoriser's power, with exact intervals."""
    record = read_json(record_path, Ident3dError, "restore it from git")
    lines = [f"The flag (a gap interval of linear R² or MCC wholly above 0) on {len(record['draws'])} "
             f"independent fresh draws of {record['n']:,} images of `{record['track']}`, each model's "
             "public split scored once (`python -m ident3d.baselines.flag_calibration`; "
             "baselines/flag_calibration.json). Intervals are exact (Clopper-Pearson) 95% intervals; "
             "gaps are public minus fresh, in points.", "",
             "| model | kind | protocol | draws | flagged | rate | mean R² gap | mean MCC gap |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    honest, power = [0, 0], {}
    for name, model in sorted(record["models"].items(), key=lambda item: (item[1]["kind"], item[0])):
        for protocol, rows in sorted(model["protocols"].items()):
            hits = sum(row["flagged"] for row in rows)
            tally = honest if model["kind"] == "honest" else power.setdefault(name, [0, 0])
            tally[0] += hits
            tally[1] += len(rows)
            gaps = [f"{100 * sum(row['gap'][m]['gap'] for row in rows) / len(rows):+.2f}"
                    for m in ("linear_r2", "mcc_pearson")]
            lines.append(f"| {name} | {model['kind']} | {protocol} | {len(rows)} | {hits} | "
                         f"{_rate(hits, len(rows))} | {' | '.join(gaps)} |")
    lines += ["", f"False alarms on honest models: {_rate(*honest)}."
              + "".join(f" Power against {name}: {_rate(*tally)}." for name, tally in power.items())]
    hits, n = honest
    if n and clopper_pearson(hits, n)[1] <= 0.05:
        lines.append("The false-alarm rate is at most 5% with 95% confidence.")
    elif n:
        lines.append("Whether the false-alarm rate is at most 5% is not decidable at this budget: its "
                     f"interval reaches {100 * clopper_pearson(hits, n)[1]:.0f}%.")
    return "\n".join(lines)


def _rate(hits: int, n: int) -> str:
    if n == 0:
        return "–"
    low, high = clopper_pearson(hits, n)
    return f"{hits}/{n} = {100 * hits / n:.0f}% [{100 * low:.0f}, {100 * high:.0f}]"


def _model(text: str, kind: str) -> tuple[str, tuple[Path, str]]:
    name, sep, path = text.partition("=")
    if not sep or not name or not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=FILE.pt2 with an existing file")
    return name, (Path(path), kind)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="dataset root with the track's public test split")
    parser.add_argument("out", type=Path, help="folder for the draws (kept: later models use the same draws)")
    parser.add_argument("--model", action="append", default=[], type=lambda t: _model(t, "honest"),
                        metavar="NAME=FILE", help="an honest model (repeat)")
    parser.add_argument("--memoriser", action="append", default=[], type=lambda t: _model(t, "memoriser"),
                        metavar="NAME=FILE", help="a memorising model (repeat)")
    parser.add_argument("--draws", type=int, default=5, help="independent fresh draws (default 5)")
    parser.add_argument("--record", type=Path, default=RECORD, help="the record to extend")
    args = parser.parse_args(argv)
    try:
        measure(args.data, args.out, dict(args.model + args.memoriser), args.draws, args.record)
    except Ident3dError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(markdown(args.record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
