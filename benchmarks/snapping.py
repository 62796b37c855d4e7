"""How much snapping to rendered latents widens the positives: the spread table of docs/data.md.

    python -m benchmarks.snapping [--write]      (from the repository root)

``ContrastivePairs`` finds each positive among the rendered latents (FAISS), so its realised spread
(the per-latent std of ``z_pos - z``, ``effective_conditional`` over 5,000 pairs) is wider than the
asked scale. Only latents matter here: the splits measured hold the latents of v2 splits drawn with
seed 0 (at 100,000, exactly the CPU track's training latents; checked against the track's sha256)
and 1-pixel stand-in images. Prints the table; ``--write`` writes it into docs/data.md between the
markers (tests/test_snapping_table.py fails when the page differs from what this computes).

It also measures the shape of the two conditionals of Table 4's Laplace row as the CPU track trains
them (docs/cpu-track.md): Normal and Laplace positives snapped to the track's training latents (the
``normal-box`` and ``laplace-box`` presets' scales) and drawn exactly (the ``v2pairs-normal`` and
``v2pairs-laplace`` data sets of baselines/cpu_track.toml, whose latents ``sample_pairs`` gives
without rendering); ``--write`` writes that table into docs/cpu-track.md.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

from ident3d.baselines import presets
from ident3d.baselines.experiment import load_experiment
from ident3d.baselines.reports import write_block
from ident3d.datasets import ThreeDIdent
from ident3d.fake_splits import write_fake_split
from ident3d.pairs import ContrastivePairs
from ident3d.tracks import get_track
from ident3d.variants import get_variant

ROOT = Path(__file__).resolve().parent.parent
BLOCK_BEGIN = "<!-- snapping:begin (python -m benchmarks.snapping --write) -->"
BLOCK_END = "<!-- snapping:end -->"
PAGE = ROOT / "docs" / "data.md"
SHAPES_BEGIN = "<!-- conditional-shapes:begin (python -m benchmarks.snapping --write) -->"
SHAPES_END = "<!-- conditional-shapes:end -->"
SHAPES_PAGE = ROOT / "docs" / "cpu-track.md"
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


def table(measured: dict[int, dict[str, np.ndarray]]) -> str:
    def mean_of(values: np.ndarray) -> str:
        return f"{values.mean():.2f}"

    lines = ["| rendered latents | asked 0.1 for every latent | the original's positives "
             '(`anchor="pre-snap"`), 0.1 | asked 0.02 (five latents) / 0.3 (five) '
             "| asked 0.02, 0.05, 0.1, 0.2, 0.5 (twice) |",
             "|---:|---:|---:|---:|---:|"]
    for n, s in measured.items():
        mixed = f"{s['mixed'][:5].mean():.2f} / {s['mixed'][5:].mean():.2f}"
        ladder = ", ".join(f"{s['ladder'][[j, j + 5]].mean():.2f}" for j in range(5))
        lines.append(f"| {n:,} | {mean_of(s['0.1'])} | {mean_of(s['pre-snap 0.1'])} | {mixed} | {ladder} |")
    return "\n".join(lines)


def block(measured: dict[int, dict[str, np.ndarray]]) -> str:
    return "\n".join([BLOCK_BEGIN, table(measured), BLOCK_END])


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
        spec = experiment.data[data_name]["pairs"]
        rows = get_variant(spec["variant"]).sample_pairs(spec["n"], spec["seed"], spec["conditional"],
                                                        spec["scale"])
        out["exact", kind] = shape(rows[1::2] - rows[0::2])
    return out


def shapes_block(shapes: dict[tuple[str, str], tuple[float, float]]) -> str:
    n_train = get_track(TRACK).splits["train"].n
    where = {"snapped": f"snapped to the track's {n_train:,} training latents (`v2-normal-box`, "
                        f"`v2-laplace-box`; {SHAPE_PAIRS:,} pairs)",
             "exact": "rendered exactly (`v2pairs-normal-box`, `v2pairs-laplace-box`; every pair of the "
                      "data set)"}
    lines = ["| positives | Normal: std | Normal: excess kurtosis | Laplace: std "
             "| Laplace: excess kurtosis |",
             "|---|---:|---:|---:|---:|"]
    for how, label in where.items():
        (sn, kn), (sl, kl) = shapes[how, "normal"], shapes[how, "laplace"]
        lines.append(f"| {label} | {sn:.3f} | {kn:+.2f} | {sl:.3f} | {kl:+.2f} |")
    return "\n".join([SHAPES_BEGIN, *lines, SHAPES_END])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="write the tables into docs/data.md and docs/cpu-track.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measured = measure(Path(tmp))
        shapes = conditional_shapes(ThreeDIdent(Path(tmp) / str(SIZES[-1]), "train"))
    print(table(measured), "", shapes_block(shapes), sep="\n")
    if args.write:
        write_block(block(measured), BLOCK_BEGIN, BLOCK_END, PAGE)
        write_block(shapes_block(shapes), SHAPES_BEGIN, SHAPES_END, SHAPES_PAGE)


if __name__ == "__main__":
    main()
