"""How much snapping to rendered latents widens the positives: the spread table of docs/data.md.

    python -m benchmarks.snapping [--write]      (from the repository root)

``ContrastivePairs`` finds each positive among the rendered latents (FAISS), so its realised spread
(the per-latent std of ``z_pos - z``, ``effective_conditional`` over 5,000 pairs) is wider than the
asked scale. Only latents matter here: the splits measured hold the latents of v2 splits drawn with
seed 0 (at 100,000, exactly the CPU track's training latents; checked against the track's sha256)
and 1-pixel stand-in images. Prints the table; ``--write`` writes it into docs/data.md between the
markers (tests/test_snapping_table.py fails when the page differs from what this computes).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from ident3d.datasets import ThreeDIdent
from ident3d.generated_blocks import write_block
from ident3d.pairs import ContrastivePairs
from ident3d.synthetic import write_synthetic_split
from ident3d.tracks import get_track

BLOCK_BEGIN = "<!-- snapping:begin (python -m benchmarks.snapping --write) -->"
BLOCK_END = "<!-- snapping:end -->"
PAGE = Path(__file__).resolve().parent.parent / "docs" / "data.md"
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
        write_synthetic_split(scratch / str(n), "train", n=n, size=1, png=False, seed=0)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the table into docs/data.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measured = measure(Path(tmp))
    print(table(measured))
    if args.write:
        write_block(block(measured), BLOCK_BEGIN, BLOCK_END, PAGE)


if __name__ == "__main__":
    main()
