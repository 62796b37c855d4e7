"""How much snapping to rendered latents widens the positives: the spread table of docs/data.md.

    python -m benchmarks.snapping [--write]      (from the repository root)

``ContrastivePairs`` finds each positive among the rendered latents (FAISS), so its realised spread
(the per-latent std of ``z_pos - z``, ``effective_conditional`` over 5,000 pairs) is wider than the
asked scale. Only latents matter here: the splits measured hold the latents of v2 splits drawn with
seed 0 (at 100,000, exactly the CPU track's training latents; checked against the track's sha256)
and 1-pixel stand-in images. Prints the table; ``--write`` commits the figures to
benchmarks/measured/snapping.json and regenerates the docs' tables from them through the reports
registry (tests/test_snapping_table.py fails when the committed figures differ from what this computes).

It also measures the shape of the two conditionals of Table 4's Laplace row as the CPU track trains
them (docs/cpu-track.md): Normal and Laplace positives snapped to the track's training latents (the
``normal-box`` and ``laplace-box`` presets' scales) and drawn exactly (the ``v2pairs-normal`` and
``v2pairs-laplace`` data sets of baselines/cpu_track.toml, whose latents ``sample_pairs`` gives
without rendering), shown in docs/cpu-track.md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ident3d import atomic
from ident3d.baselines import measured_tables, presets, reports
from ident3d.baselines.experiment import load_experiment
from ident3d.datasets import ThreeDIdent
from ident3d.fake_splits import write_fake_split
from ident3d.pairs import ContrastivePairs
from ident3d.tracks import get_track
from ident3d.variants import get_variant

ROOT = Path(__file__).resolve().parent.parent
MEASURED = measured_tables.measured_file(ROOT, measured_tables.SNAPPING)
EXPERIMENT = ROOT / "baselines" / "cpu_track.toml"
ROW = {"normal": ("normal-box", "v2pairs-normal"), "laplace": ("laplace-box", "v2pairs-laplace")}
SHAPE_PAIRS = 25_000  # snapped pairs drawn, as many as each exact data set holds
SIZES = (3_000, 20_000, 100_000)
PAIRS = 5_000
MIXED = np.array([0.02] * 5 + [0.3] * 5)
LADDER = np.array([0.02, 0.05, 0.1, 0.2, 0.5] * 2)
TRACK = "3dident-v2-64"


def spread(data: ThreeDIdent, scale: float | np.ndarray, anchor: str = "snapped") -> np.ndarray:
    return ContrastivePairs(data, scale=scale, anchor=anchor, seed=0).effective_conditional(PAIRS)


def measure(scratch: Path) -> dict[int, dict[str, np.ndarray]]:
    """Per split size: the realised spreads for each asked setting."""
    out = {}
    for n in SIZES:
        write_fake_split(scratch / str(n), "train", n=n, size=1, png=False, seed=0)
        data = ThreeDIdent(scratch / str(n), "train")
        train = get_track(TRACK).splits["train"]
        if n == train.n and data.manifest["raw_latents_sha256"] != train.latents_sha256:
            raise SystemExit(f"error: the {n:,} latents drawn here are not {TRACK}'s training latents")
        out[n] = {"0.1": spread(data, 0.1), "pre-snap 0.1": spread(data, 0.1, anchor="pre-snap"),
                  "mixed": spread(data, MIXED), "ladder": spread(data, LADDER)}
    return out


def shape(differences: np.ndarray) -> tuple[float, float]:
    """Means over latents of the std and of the excess kurtosis of ``z_pos - z``."""
    return float(differences.std(axis=0).mean()), float(stats.kurtosis(differences, axis=0).mean())


def conditional_shapes(track_train: ThreeDIdent) -> dict[tuple[str, str], tuple[float, float]]:
    """(std, excess kurtosis) of each conditional of the Laplace row, snapped to ``track_train`` as
    the presets ask and drawn exactly as the experiment's paired data sets are."""
    experiment = load_experiment(EXPERIMENT)
    out = {}
    for kind, (preset, data_name) in ROW.items():
        asked = presets.read(preset)
        snapped = ContrastivePairs(track_train, conditional=asked["conditional"], scale=asked["scale"])
        out["snapped", kind] = shape(snapped.differences(SHAPE_PAIRS))
        pairs = experiment.data[data_name]["pairs"]
        rows = get_variant(pairs["variant"]).sample_pairs(pairs["n"], pairs["seed"], pairs["conditional"],
                                                         pairs["scale"])
        out["exact", kind] = shape(rows[1::2] - rows[0::2])
    return out


def figures(measured: dict[int, dict[str, np.ndarray]],
            shapes: dict[tuple[str, str], tuple[float, float]]) -> dict[str, Any]:
    """What ``--write`` commits (benchmarks/measured/snapping.json), from which the docs' tables are made."""
    return {"pairs": PAIRS, "shape_pairs": SHAPE_PAIRS, "train_n": get_track(TRACK).splits["train"].n,
            "spreads": {str(n): {setting: values.tolist() for setting, values in s.items()}
                        for n, s in measured.items()},
            "shapes": {how: {kind: list(shapes[how, kind]) for kind in ROW} for how in ("snapped", "exact")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help=f"commit the figures to {MEASURED} and regenerate the docs' tables from them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measured = measure(Path(tmp))
        found = figures(measured, conditional_shapes(ThreeDIdent(Path(tmp) / str(SIZES[-1]), "train")))
    print(measured_tables.spreads_table(found), "", measured_tables.shapes_table(found), sep="\n")
    if args.write:
        atomic.write_bytes(MEASURED, (json.dumps(found, indent=1) + "\n").encode())
        reports.main(["--write", "--only", "snapping", "conditional-shapes"])


if __name__ == "__main__":
    main()
