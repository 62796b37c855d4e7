import colorsys
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ident3d.errors import LatentError
from ident3d.scene import (
    GROUND_Z,
    SATURATIONS,
    TEAPOT_SIZE,
    colorsys_hsv_to_rgb_clamped,
)
from ident3d.variants import scene_latents, scene_params

HUE_COLUMNS = {"object_rgb": 7, "spot_rgb": 8, "ground_rgb": 9}
REPO = Path(__file__).resolve().parents[1]


def traverse(column: int, n: int = 10001) -> np.ndarray:
    z = np.zeros((n, 10))
    z[:, column] = np.linspace(-1, 1, n)
    return z


@pytest.mark.parametrize("field,column", HUE_COLUMNS.items())
def test_v2_hues_are_continuous_injective_and_in_gamut(field, column):
    rgb = getattr(scene_params(traverse(column), "v2"), field)
    assert rgb.min() >= 0 and rgb.max() <= 1
    steps = np.abs(np.diff(rgb, axis=0)).max(axis=1)
    assert steps.min() > 0, "plateau: neighbouring latents give the same colour"
    # Continuity: HSV is piecewise linear, 6 * S * dh per channel per step at most.
    assert steps.max() <= 6 * 1.0 * (0.5 / 10000) * 1.0001
    # The two ends of the arc are clearly different colours.
    assert np.abs(rgb[0] - rgb[-1]).max() > 0.5
    # Injective on the whole arc, not only between neighbours.
    rounded = np.round(rgb, 9)
    assert len(np.unique(rounded, axis=0)) == len(rgb)


def test_legacy_reproduces_the_documented_object_hue_plateau():
    z = np.zeros((3, 10))
    z[:, 7] = [0.0, -0.2, -0.5]
    rgb = scene_params(z, "legacy").object_rgb
    np.testing.assert_array_equal(rgb, np.tile([1.0, 0.0, 0.0], (3, 1)))
    # ... and v2 separates the same three latents.
    assert len(np.unique(scene_params(z, "v2").object_rgb, axis=0)) == 3


@pytest.mark.parametrize("field,column,plateau", [
    ("object_rgb", 7, (-2 / 3, 0.0)),
    ("spot_rgb", 8, (-2 / 3, -1 / 6)),
    ("ground_rgb", 9, (-2 / 3, -4 / 9)),
])
def test_legacy_plateaus_and_jump_match_reference(field, column, plateau):
    z = traverse(column)
    rgb = getattr(scene_params(z, "legacy"), field)
    u = z[:, column]
    inside = (u > plateau[0] + 1e-3) & (u < plateau[1] - 1e-3)
    assert np.ptp(rgb[inside], axis=0).max() == 0
    jump = np.abs(np.diff(rgb, axis=0)).max(axis=1)
    assert jump.argmax() == np.searchsorted(u, -2 / 3) - 1
    assert jump.max() > 0.3


def test_legacy_equals_colorsys_then_clamp():
    hues = np.linspace(-0.25, 0.25, 401)
    for s in SATURATIONS:
        expected = np.maximum([colorsys.hsv_to_rgb(h, s, 1.0) for h in hues], 0.0)
        np.testing.assert_allclose(colorsys_hsv_to_rgb_clamped(hues, s), expected, atol=1e-12)


def test_geometry_is_shared_and_matches_reference():
    z = np.zeros((2, 10))
    z[1] = [1, -1, 1, 1, 0, -1, 1, 0, 0, 0]
    for mapping in ("v2", "legacy"):
        p = scene_params(z, mapping)
        np.testing.assert_allclose(p.object_location[0], [0, 0, TEAPOT_SIZE / 2])
        np.testing.assert_allclose(p.object_location[1], [3, -3, 3 + TEAPOT_SIZE / 2])
        np.testing.assert_allclose(p.object_rotation[1], [np.pi / 2, 0, -np.pi / 2])
        np.testing.assert_allclose(p.spot_location[0], [0, 4, 6 + TEAPOT_SIZE], atol=1e-12)
        np.testing.assert_allclose(p.spot_location[1], [4, 0, 6 + TEAPOT_SIZE], atol=1e-12)
    # The lowest teapot origin stays above the ground.
    assert -3 + TEAPOT_SIZE / 2 > GROUND_Z


def test_scene_latents_columns():
    z = np.zeros((1, 10))
    z[0, 7] = -1.0
    v2, legacy = scene_latents(z, "v2"), scene_latents(z, "legacy")
    assert v2.dtype == np.float32 and v2.shape == (1, 10)
    assert v2[0, 7] == pytest.approx(0.75) and legacy[0, 7] == pytest.approx(-0.25)


def test_row_gives_plain_values():
    row = scene_params(np.zeros((1, 10))).row(0)
    assert row.pop("object_shape") == "teapot"  # v2 has no class latent: always the teapot
    assert set(row) == {"object_location", "object_rotation", "spot_location", "object_rgb",
                        "spot_rgb", "ground_rgb"}
    assert all(isinstance(v, tuple) and len(v) == 3 for v in row.values())


def test_unknown_mapping_and_bad_latents():
    with pytest.raises(LatentError, match="unknown variant 'v3'"):
        scene_params(np.zeros((1, 10)), "v3")
    with pytest.raises(LatentError, match="row 0, column 0"):
        scene_params(np.full((1, 10), 1.5))


def test_import_ident3d_stays_light():
    code = ("import sys, ident3d, ident3d.scene, ident3d.latents, ident3d.card;"
            "bad = [m for m in ('bpy', 'torch', 'ident3d.render', 'ident3d.baselines', "
            "'ident3d.leaderboard') "
            "if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_cli_info_prints_ten_factors():  # header row + 10 factors
    out = subprocess.run([sys.executable, "-m", "ident3d.cli", "info", "--variant", "legacy"],
                         capture_output=True, text=True, check=True).stdout
    assert out.count("\n| ") == 11 and "clamped" in out and "rotation_gamma" in out
