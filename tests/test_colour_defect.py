"""What the renderer receives of each latent (ident3d.variants.ceilings) and the colour-defect section
of docs/cpu-track.md (ident3d.baselines.colour_defect), which must be what the committed entries give."""

import math

import pytest

from ident3d.variants import get_variant
from ident3d.variants.ceilings import readout_ceilings


def test_the_legacy_plateaus_cap_each_hue_at_one_minus_the_cube_of_its_length_over_eight():
    # docs/facts.md: object hue flat on [-2/3, 0], spotlight on [-2/3, -1/6], ground on [-2/3, -4/9]
    expected = {"object_hue": 2 / 3, "spotlight_hue": 1 / 2, "ground_hue": 2 / 9}
    ceilings = readout_ceilings(get_variant("legacy"))
    for name, value in ceilings.items():
        length = expected.get(name, 0.0)
        assert value == pytest.approx(1 - length**3 / 8, abs=1e-4), name


def test_an_injective_mapping_hides_nothing():
    assert all(math.isclose(c, 1.0) for c in readout_ceilings(get_variant("v2")).values())


def test_a_mapping_that_folds_a_latent_hides_it_entirely():
    v2 = get_variant("v2")

    class Folded:  # the spotlight hue of v2 driven by |u|: u and -u look alike, E[u | |u|] = 0
        names = v2.names

        def scene_params(self, raw):
            raw = raw.copy()
            raw[:, 8] = abs(raw[:, 8])
            return v2.scene_params(raw)

    ceilings = readout_ceilings(Folded(), n=2_001)
    assert ceilings["spotlight_hue"] == pytest.approx(0.0, abs=1e-9)
    assert ceilings["object_hue"] == pytest.approx(1.0)
