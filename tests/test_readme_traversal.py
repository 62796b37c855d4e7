"""The traversal figure (docs/traversals.png, shown in docs/why.md: legacy left, v2 right) is what the
``ident3d traverse`` command of docs/rendering.md draws, half by half."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

FIGURE = Path(__file__).resolve().parent.parent / "docs" / "traversals.png"
PAGE = FIGURE.parent / "rendering.md"
COMMAND = "ident3d traverse --out traversal-v2.png --variant v2 --steps 7 --preset standard --resolution 80"
TOLERANCE = 1.5  # mean absolute difference per channel, /255 (renders agree to about 0.7 here)


@pytest.mark.blender
@pytest.mark.slow
@pytest.mark.parametrize("variant, half", [("legacy", "left"), ("v2", "right")])
def test_the_readme_command_draws_its_half_of_the_figure(tmp_path, variant, half):
    assert COMMAND in PAGE.read_text()
    out = tmp_path / f"{variant}.png"
    argv = COMMAND.split()[1:]
    argv[argv.index("--out") + 1], argv[argv.index("--variant") + 1] = str(out), variant
    done = subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", *argv, "--workers", "2"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    drawn = np.asarray(Image.open(out).convert("RGB"), dtype=np.float64)
    figure = np.asarray(Image.open(FIGURE).convert("RGB"), dtype=np.float64)
    width = drawn.shape[1]
    part = figure[:, :width] if half == "left" else figure[:, -width:]
    assert part.shape == drawn.shape
    assert np.abs(part - drawn).mean() < TOLERANCE
