"""The table of realised spreads in docs/data.md under snapping is what ``benchmarks.snapping`` computes."""

from pathlib import Path

import pytest

from benchmarks import snapping

PAGE = Path(__file__).resolve().parent.parent / "docs" / "data.md"


@pytest.mark.slow
def test_the_spread_table_is_what_snapping_measures(tmp_path):
    measured = snapping.measure(tmp_path)  # also checks the 100,000 latents are the CPU track's
    assert snapping.block(measured) in PAGE.read_text(), \
        "docs/data.md's spread table is stale. Fix: python -m benchmarks.snapping --write"
    one_tenth = [measured[n]["0.1"].mean() for n in snapping.SIZES]
    assert one_tenth == sorted(one_tenth, reverse=True) and one_tenth[-1] > 0.1  # wider than asked
