"""The pixel read-out under ``cl-ica-2021`` on many random samples of the CPU track's test split: how
far the protocol's random 4,096-image sample (halved 2,048/2,048 for the linear read-out) moves the
score of a model that has no seed. The Table 4 relations (baselines/relations.py) give the pixel arm
this spread instead of none.

    python -m ident3d.baselines.pixel_splits --data ROOT     # ROOT holds the track's test split

Writes ``baselines/pixel_splits.json``: the track, the protocol and its version, and per sample seed
the linear R² and Pearson MCC. Seed 0 is the protocol's own sample; its scores are checked against
``evaluate`` on the same split (the path every entry takes), so the file and the entries score the
same features.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch

from ident3d import atomic
from ident3d.baselines.pixels import PixelReadout
from ident3d.datasets import ThreeDIdent
from ident3d.errors import Ident3dError
from ident3d.evaluation import encode, evaluate
from ident3d.outputs import check_output_file
from ident3d.protocols import REGISTRY, ScoringProtocol
from ident3d.readers import read_json
from ident3d.submissions import Standardisation, check_features

PROTOCOL = REGISTRY["cl-ica-2021"]
TRACK = "3dident-v2-64@1"
SAMPLES = 20
OUT = Path(__file__).resolve().parent / "pixel_splits.json"
METRICS = ("linear_r2", "mcc_pearson")
COMMAND = "python -m ident3d.baselines.pixel_splits --data ROOT --overwrite"


def sample_scores(z: np.ndarray, h: np.ndarray, protocol: ScoringProtocol,
                  seeds: range) -> dict[str, list[float]]:
    """Each metric's protocol mean for each sample seed of ``protocol``."""
    out: dict[str, list[float]] = {m: [] for m in METRICS}
    for seed in seeds:
        scores = dataclasses.replace(protocol, sample_seed=seed).score(z, h)
        for metric in METRICS:
            out[metric].append(protocol.mean(scores.per_latent(metric)))
    return out


def measure(root: Path, samples: int = SAMPLES) -> dict:
    """The document ``main`` writes, for the track's test split under ``root``."""
    model = PixelReadout()
    official = evaluate(model, root, protocol=PROTOCOL.name, progress=False).document
    if official["dataset"]["track"] != TRACK:
        raise Ident3dError(f"{root}/test: is {official['dataset']['track']}, not the {TRACK} test split. "
                           "Fix: pass the root `ident3d render --track 3dident-v2-64 --split test` made.")
    dataset = ThreeDIdent(root, "test")
    features = encode(model, dataset, np.arange(len(dataset)), torch.device("cpu"), 256, progress=False)
    h = check_features(features, len(dataset), "pixel read-out")
    h = Standardisation.fit(h)(h, "pixel read-out")
    z = dataset.latents[:, dataset.variant_spec.continuous_columns].astype(np.float64)
    scores = sample_scores(z, h, PROTOCOL, range(samples))
    for metric in METRICS:
        if scores[metric][0] != official["metrics"][metric]:
            raise Ident3dError(f"pixel read-out {metric}: sample seed 0 gives {scores[metric][0]!r} here and "
                               f"{official['metrics'][metric]!r} through evaluate; the two paths must agree")
    return {"track": TRACK, "protocol": PROTOCOL.name, "protocol_version": PROTOCOL.version,
            "sample_seeds": list(range(samples)),
            **scores, "command": f"{COMMAND} --samples {samples}"}


def pixel_samples(entry: dict, path: Path = OUT) -> dict[str, list[float]]:
    """The written scores per metric, after checking that they belong to ``entry`` (the committed
    pixel read-out scored under the protocol): the same track and protocol, the protocol's current
    version, and seed 0 equal to the entry's scores (to 1e-9: the entry's model ran in the sandbox as
    a ``.pt2``, this one in process)."""
    document = read_json(path, Ident3dError, f"write it: {COMMAND}")
    fix = f"Fix: run `{COMMAND}` again on the track's test split."
    if not isinstance(document, dict) or any(
            not isinstance(document.get(m), list) or len(document[m]) < 3
            or not all(isinstance(v, float) for v in document[m]) for m in METRICS):
        raise Ident3dError(f"{path}: expected {', '.join(METRICS)} as lists of at least 3 scores. {fix}")
    written = (document.get("track"), document.get("protocol"), document.get("protocol_version"))
    if written != (entry["dataset"], entry["protocol"], PROTOCOL.version):
        raise Ident3dError(f"{path}: scored on {written[0]} under {written[1]} {written[2]}; the entry "
                           f"{entry['id']} is of {entry['dataset']} under {entry['protocol']} (now version "
                           f"{PROTOCOL.version}). {fix}")
    for metric in METRICS:
        if abs(document[metric][0] - entry["metrics"][metric]) > 1e-9:
            raise Ident3dError(f"{path}: {metric} of sample seed 0 is {document[metric][0]}, the entry "
                               f"{entry['id']} has {entry['metrics'][metric]}. {fix}")
    return {m: document[m] for m in METRICS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="root holding the CPU track's test split")
    parser.add_argument("--samples", type=int, default=SAMPLES, help="sample seeds 0 .. N-1")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    args = parser.parse_args(argv)
    if args.samples < 3:
        print(f"error: --samples {args.samples}: a spread needs at least 3 samples. Fix: pass 3 or more.",
              file=sys.stderr)
        return 2
    try:
        check_output_file(args.out, "--out", reads=(args.data,), overwrite=args.overwrite)
        document = measure(args.data, args.samples)
    except Ident3dError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    atomic.write_json(args.out, document)
    for metric in METRICS:
        values = np.asarray(document[metric])
        print(f"{metric}: mean {100 * values.mean():.2f}, sd {100 * values.std(ddof=1):.2f} over "
              f"{len(values)} samples (seed 0: {100 * values[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
