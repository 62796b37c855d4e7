"""The figures ``benchmarks.snapping`` committed (benchmarks/measured/snapping.json, from which the
reports registry makes the spread table of docs/data.md and the shapes of the Laplace row's
conditionals in docs/cpu-track.md) are what it measures."""

import json

import pytest

from benchmarks import snapping
from ident3d.baselines.measured_tables import shapes_table, spreads_table
from ident3d.datasets import ThreeDIdent


@pytest.mark.slow
def test_the_committed_snapping_figures_are_what_snapping_measures(tmp_path):
    measured = snapping.measure(tmp_path)  # also checks the 100,000 latents are the CPU track's
    shapes = snapping.conditional_shapes(ThreeDIdent(tmp_path / str(snapping.SIZES[-1]), "train"))
    found, committed = snapping.figures(measured, shapes), json.loads(snapping.MEASURED.read_text())
    stale = "benchmarks/measured/snapping.json is stale. Fix: python -m benchmarks.snapping --write"
    assert spreads_table(found) == spreads_table(committed), stale  # as shown: to the digits printed
    assert shapes_table(found) == shapes_table(committed), stale
    one_tenth = [measured[n]["0.1"].mean() for n in snapping.SIZES]
    assert one_tenth == sorted(one_tenth, reverse=True) and one_tenth[-1] > 0.1  # wider than asked

    kurtosis_gap = {how: shapes[how, "laplace"][1] - shapes[how, "normal"][1] for how in ("exact", "snapped")}
    assert kurtosis_gap["exact"] > 2  # exact pairs keep most of the Laplace's tails (3 untruncated) ...
    assert abs(kurtosis_gap["snapped"]) < kurtosis_gap["exact"] / 4  # ... snapping all but erases them


@pytest.mark.slow
def test_snapping_widens_every_latent_alike_the_rotations_too(tmp_path):
    """Why do the CPU track's contrastive arms read the rotations at R² 0? Not because snapping treats
    them differently: the snapped positives' offsets spread the same along every latent."""
    import numpy as np

    from ident3d.fake_splits import write_fake_split
    from ident3d.pairs import ContrastivePairs

    write_fake_split(tmp_path, "train", n=100_000, size=2, png=False)  # uniform, as the track's latents
    split = ThreeDIdent(tmp_path, "train")
    anchor, positive = ContrastivePairs(split, scale=0.1, seed=0).sample_indices(np.arange(20_000))
    spread = (split.latents[positive] - split.latents[anchor]).std(axis=0)
    names = [f.name for f in split.variant_spec.factors]
    rotations = [spread[i] for i, name in enumerate(names) if name.startswith("rotation")]
    others = [spread[i] for i, name in enumerate(names) if not name.startswith("rotation")]
    assert len(rotations) == 3 and min(spread) > 0.1  # every latent's wider than the asked 0.1
    assert abs(np.mean(rotations) / np.mean(others) - 1) < 0.05, spread
