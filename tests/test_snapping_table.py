"""The README's table of realised spreads under snapping is what ``benchmarks.snapping`` computes."""

from pathlib import Path

import pytest

from benchmarks import snapping

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.slow
def test_the_readme_spread_table_is_what_snapping_measures(tmp_path):
    measured = snapping.measure(tmp_path)  # also checks the 100,000 latents are the CPU track's
    assert snapping.readme_block(measured) in README.read_text(), \
        "README's spread table is stale. Fix: python -m benchmarks.snapping --readme"
    one_tenth = [measured[n]["0.1"].mean() for n in snapping.SIZES]
    assert one_tenth == sorted(one_tenth, reverse=True) and one_tenth[-1] > 0.1  # wider than asked
