"""Paired splits: positives rendered from exactly the asked conditional, loaded without snapping."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import write_fake_split
from PIL import Image
from safetensors import safe_open

from ident3d.baselines.config import load_preset
from ident3d.baselines.train import read_log, train
from ident3d.datasets import ThreeDIdent
from ident3d.errors import DatasetError
from ident3d.latents import sample_uniform
from ident3d.packing import pack_split
from ident3d.pairs import ContrastivePairs, RenderedPairs
from ident3d.variants import get_variant

sample_pairs = get_variant("v2").sample_pairs

SCALES = np.array([0.01] * 5 + [0.3] * 5)


def test_pairs_keep_the_uniform_anchors_and_the_asked_per_latent_spread():
    rows = sample_pairs(20000, seed=3, scale=SCALES)
    assert rows.shape == (40000, 10) and rows.dtype == np.float32
    assert np.array_equal(rows[0::2], sample_uniform(20000, 3))  # anchors: the unpaired split's latents
    assert rows.min() >= -1 and rows.max() <= 1
    spread = (rows[1::2] - rows[0::2]).std(axis=0)
    # truncation to [-1, 1] narrows the wide latents a little; nothing widens the narrow ones
    assert np.allclose(spread[:5], 0.01, rtol=0.05), spread
    assert np.all((spread[5:] > 0.25) & (spread[5:] < 0.31)), spread


def render_paired(root, *extra):
    args = [sys.executable, "-m", "ident3d.cli", "-q", "render", "--out", str(root), "--split", "train",
            "--n", "3", "--pairs", "--preset", "preview", "--resolution", "32", "--samples", "2", *extra]
    return subprocess.run(args, capture_output=True, text=True)


@pytest.mark.blender
def test_a_paired_split_renders_loads_and_trains(tmp_path):
    root = tmp_path / "data"
    scale = ",".join(str(v) for v in SCALES)
    done = render_paired(root, "--scale", scale)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((root / "train/manifest.json").read_text())
    assert manifest["n"] == 6 and manifest["pairs"]["conditional"] == "normal"
    assert manifest["pairs"]["scale"] == pytest.approx(SCALES.tolist())
    raw = np.load(root / "train/raw_latents.npy")
    assert np.array_equal(raw, sample_pairs(3, 0, scale=SCALES))

    again = render_paired(root, "--scale", "0.2")  # other pairs into the same split
    assert again.returncode == 1 and "pairs" in again.stderr and "already holds" in again.stderr

    pack_split(root, "train", progress=False)
    dataset = ThreeDIdent(root, "train")
    pairs = RenderedPairs(dataset, seed=0)
    assert len(pairs) == 3 and "3 pairs" in repr(pairs)
    x, x_pos, z, z_pos = pairs[7]  # any integer is an item
    anchor, positive = (int(i[0]) for i in pairs.sample_indices(np.array([7])))
    assert positive == anchor + 1 and anchor % 2 == 0
    assert torch.equal(z, torch.from_numpy(raw[anchor]))
    assert torch.equal(z_pos, torch.from_numpy(raw[positive]))
    png = np.array(Image.open(dataset.image_path(positive)).convert("RGB"))
    assert torch.equal(x_pos, torch.from_numpy(png).permute(2, 0, 1).float() / 255)
    assert not torch.equal(x, x_pos)
    assert np.allclose(pairs.effective_conditional(), (raw[1::2] - raw[0::2]).std(axis=0))

    # trained on the pairs with the content/style baseline's settings (baselines/content_style.toml):
    # cosine InfoNCE against every other view, an output narrower than the latents
    config = load_preset("smoke", data=str(root), positives="rendered", iterations=2, batch_size=4,
                         log_every=1, checkpoint_every=1, device="cpu", space="sphere", loss="vmf",
                         latent_dim=6, negatives="symmetric", tau=1.0)
    train(config, tmp_path / "run", progress=False)
    assert len(read_log(tmp_path / "run/log.jsonl")) == 2
    with safe_open(str(tmp_path / "run/encoder.safetensors"), "pt") as f:
        assert json.loads(f.metadata()["config"])["latent_dim"] == 6


def test_an_unpaired_split_is_refused_with_the_command_that_makes_one(tmp_path):
    write_fake_split(tmp_path, "train", n=10, size=16)
    dataset = ThreeDIdent(tmp_path, "train")
    with pytest.raises(DatasetError, match="not a paired split.*ident3d render --pairs"):
        RenderedPairs(dataset)
    assert "normal scale 0.1" in repr(ContrastivePairs(dataset))
