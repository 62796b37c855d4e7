"""Losses against values computed by hand; output spaces; presets; batch sources."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from ident3d.baselines import losses
from ident3d.baselines.config import TrainConfig, load_preset, preset_names
from ident3d.baselines.losses import (
    AnInfoNCE,
    LpInfoNCE,
    SupervisedMSE,
    VonMisesFisherInfoNCE,
    build_loss,
    lp_power_distances,
)
from ident3d.baselines.models import Box, BoxSigmoid, Encoder, Sphere
from ident3d.baselines.positives import AugmentedPairs, StepBatches
from ident3d.datasets import ThreeDIdent
from ident3d.errors import TrainingError

T = torch.tensor


def test_l2_infonce_by_hand():
    # logits -||h_i - h_pos_j||^2 = [[0, -4], [-1, -1]]; the diagonal is the positive.
    h, h_pos = T([[0.0], [1.0]]), T([[0.0], [2.0]])
    expected = (math.log(1 + math.exp(-4)) + math.log(2)) / 2
    assert LpInfoNCE(p=2)(h, h_pos).item() == pytest.approx(expected, rel=1e-6)
    # tau divides the logits: [[0, -2], [-0.5, -0.5]]
    expected_tau = (math.log(1 + math.exp(-2)) + math.log(2)) / 2
    assert LpInfoNCE(p=2, tau=2.0)(h, h_pos).item() == pytest.approx(expected_tau, rel=1e-6)


def test_l1_and_l3_infonce_by_hand():
    h, h_pos = T([[0.0, 0.0], [1.0, 1.0]]), T([[0.0, 1.0], [1.0, 1.0]])
    # p = 1 distances: [[1, 2], [1, 0]]; p = 3: [[1, 2], [1, 0]] (entries are 0/1 per coordinate)
    row0 = -math.log(math.exp(-1) / (math.exp(-1) + math.exp(-2)))
    row1 = -math.log(1 / (math.exp(-1) + 1))
    assert LpInfoNCE(p=1)(h, h_pos).item() == pytest.approx((row0 + row1) / 2, rel=1e-6)
    h3 = T([[0.0], [2.0]])
    # p = 3 on [[0], [2]] vs [[0], [1]]: distances [[0, 1], [8, 1]]
    expected = (math.log(1 + math.exp(-1)) + -math.log(math.exp(-1) / (math.exp(-8) + math.exp(-1)))) / 2
    assert LpInfoNCE(p=3)(h3, T([[0.0], [1.0]])).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("p", [1.5, 3.0])
@pytest.mark.parametrize("chunk_elements", [losses.CHUNK_ELEMENTS, 20])  # one chunk; a row or two per chunk
def test_lp_power_distances_are_cdists_to_the_p_with_the_same_gradients(p, chunk_elements, monkeypatch):
    monkeypatch.setattr(losses, "CHUNK_ELEMENTS", chunk_elements)
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, 10, dtype=torch.float64, generator=generator, requires_grad=True) for n in (7, 5))
    assert torch.allclose(lp_power_distances(a, b, p), torch.cdist(a, b, p=p).pow(p), rtol=1e-12, atol=0)
    assert torch.autograd.gradcheck(lambda x, y: lp_power_distances(x, y, p), (a, b))
    weights = torch.randn(7, 5, dtype=torch.float64, generator=generator)
    ours = torch.autograd.grad((lp_power_distances(a, b, p) * weights).sum(), (a, b))
    theirs = torch.autograd.grad((torch.cdist(a, b, p=p).pow(p) * weights).sum(), (a, b))
    assert all(torch.allclose(x, y, rtol=1e-10, atol=1e-12) for x, y in zip(ours, theirs, strict=True))


def test_anchor_to_itself_term_adds_exp_zero_to_each_denominator():
    h, h_pos = T([[0.0], [1.0]]), T([[0.0], [2.0]])
    expected = (-math.log(1 / (1 + math.exp(-4) + 1)) - math.log(math.exp(-1) / (2 * math.exp(-1) + 1))) / 2
    assert LpInfoNCE(p=2, include_self=True)(h, h_pos).item() == pytest.approx(expected, rel=1e-6)


def test_vmf_normalises_before_the_dot_product():
    h, h_pos = T([[3.0, 0.0], [0.0, 0.5]]), T([[2.0, 0.0], [0.0, 7.0]])
    # normalised: identity vs identity -> logits I / tau
    assert VonMisesFisherInfoNCE()(h, h_pos).item() == pytest.approx(math.log(1 + math.exp(-1)), rel=1e-6)
    tau = 0.5
    assert VonMisesFisherInfoNCE(tau=tau)(h, h_pos).item() == pytest.approx(
        math.log(1 + math.exp(-2)), rel=1e-6)


def test_aninfonce_weights_each_dimension_by_its_precision():
    loss = AnInfoNCE(dim=2)
    h, h_pos = T([[1.0, 0.0], [0.0, 1.0]]), T([[1.0, 0.0], [0.0, 1.0]])
    # Lambda = 1 at init: logits -1/2 ||a - b||^2 = [[0, -1], [-1, 0]]
    assert torch.allclose(loss.precision, torch.ones(2))
    assert loss(h, h_pos).item() == pytest.approx(math.log(1 + math.exp(-1)), rel=1e-6)
    with torch.no_grad():  # Lambda = (3, 1): off-diagonal logits -1/2 (3 + 1) = -2
        loss.raw_precision.copy_(T([math.log(math.exp(3) - 1), math.log(math.e - 1)]))
    assert loss(h, h_pos).item() == pytest.approx(math.log(1 + math.exp(-2)), rel=1e-5)
    assert list(loss.parameters())[0].requires_grad


def test_the_isotropic_twin_shares_one_precision_across_dimensions():
    loss = build_loss("aninfonce-isotropic", dim=3)
    assert loss.precision.shape == (1,)
    h, h_pos = torch.randn(5, 3), torch.randn(5, 3)
    with torch.no_grad():
        loss.raw_precision.fill_(2.0)
    full = AnInfoNCE(dim=3)
    with torch.no_grad():
        full.raw_precision.fill_(2.0)
    assert loss(h, h_pos).item() == pytest.approx(full(h, h_pos).item(), rel=1e-6)


def test_supervised_mse():
    assert SupervisedMSE()(T([[1.0, 2.0]]), None, T([[0.0, 0.0]])).item() == pytest.approx(2.5)


def test_output_spaces():
    box = Box(2)
    x = T([[0.5, -0.2], [3.0, 1.5], [-4.0, 2.0]])
    assert torch.allclose(box(x), T([[0.5, -0.2], [1.0, 0.5], [-1.0, 0.5]]))
    sphere = Sphere(3)
    with torch.no_grad():
        sphere.radius.fill_(2.0)
    assert torch.allclose(sphere(torch.randn(5, 3)).norm(dim=1), torch.full((5,), 2.0))
    out = BoxSigmoid(4)(torch.randn(6, 4) * 10)
    assert out.min() >= 0 and out.max() <= 1


def test_encoder_normalises_its_own_input():
    enc = Encoder(latent_dim=3, space="unbounded", mean=(0.2, 0.4, 0.6), std=(0.5, 0.25, 0.1)).eval()
    x = torch.rand(2, 3, 16, 16)
    manual = enc.head(enc.backbone((x - enc.mean) / enc.std))
    assert torch.allclose(enc(x), manual)
    assert enc(x).shape == (2, 3)
    with pytest.raises(ValueError, match="output space 'cube'"):
        Encoder(space="cube")


def test_the_small_stem_keeps_resolution_and_rebuilds_from_its_config():
    from ident3d.baselines.models import build_encoder

    paper, small = Encoder(stem="imagenet").eval(), Encoder(stem="small").eval()
    x = torch.rand(2, 3, 32, 32)
    assert paper(x).shape == small(x).shape == (2, 10)
    sizes = {}
    for name, enc in (("imagenet", paper), ("small", small)):
        def keep(module, inputs, output, name=name):
            sizes[name] = output.shape[-1]

        enc.backbone.layer4.register_forward_hook(keep)
        enc(x)
    assert sizes == {"imagenet": 1, "small": 4}  # 32 px: 4 x 4 positions before pooling, not 1
    again = build_encoder(small.config())
    again.load_state_dict(small.state_dict())
    torch.testing.assert_close(again.eval()(x), small(x))
    with pytest.raises(ValueError, match="stem"):
        Encoder(stem="tiny")


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_is_a_valid_config(name):
    config = load_preset(name, data="/data")
    assert config.preset == name and config.data == "/data"
    if name != "smoke":  # the original's optimisation defaults (docs/facts.md, "Training")
        assert (config.batch_size, config.lr, config.iterations) == (512, 1e-4, 30_000)


def test_every_preset_has_a_row_in_the_training_docs():
    table = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in table.splitlines() if line.startswith("| `")}
    assert set(preset_names()) <= rows, "docs/training.md lacks a row for a preset. Fix: add it to the table"


def test_presets_match_table_4():
    assert load_preset("normal-box").space == "box" and load_preset("normal-box").p == 2
    assert load_preset("laplace-box").conditional == "laplace" and load_preset("laplace-box").loss == "lp"
    assert load_preset("normal-sphere-vmf").loss == "vmf"
    assert load_preset("augm-sphere-vmf").positives == "augment"
    assert load_preset("supervised").loss == "mse"


@pytest.mark.parametrize("name", [n for n in preset_names() if n.endswith("-original")])
def test_original_presets_differ_from_their_variant_in_the_box_and_the_denominator_only(name):
    from dataclasses import asdict

    original, variant = asdict(load_preset(name)), asdict(load_preset(name.removesuffix("-original")))
    changed = {k for k in original if original[k] != variant[k]} - {"preset"}
    assert original["negatives"] == "anchors"  # cl-ica's denominator: the anchors, the self term included
    assert changed == ({"negatives", "space"} if variant["space"] == "box" else {"negatives"})
    if variant["space"] == "box":
        assert original["space"] == "box-sigmoid"  # cl-ica's SoftclipLayer
    scales = load_preset("aninfonce").scale  # five levels from nearly fixed to widely varying
    assert len(scales) == 10 and len(set(scales)) == 5 and max(scales) / min(scales) >= 20
    isotropic = load_preset("aninfonce-isotropic")
    assert isotropic.scale == scales and isotropic.loss == "aninfonce-isotropic"


def test_each_layer_of_a_config_wins_over_the_ones_before_it(tmp_path):
    from ident3d.baselines.config import build_config

    preset = load_preset("smoke")
    (tmp_path / "mine.toml").write_text('lr = 0.5\nseed = 7\ntau = 0.25\ndata = "elsewhere"\n')
    config = build_config("smoke", data=tmp_path, config_file=tmp_path / "mine.toml",
                          settings=["seed=8", "tau=0.3", "tau=0.4"], lr=None, seed=9)
    assert config.lr == 0.5  # the file over the preset (a None flag is not set)
    assert config.tau == 0.4 and config.seed == 9  # --set over the file (the last wins), a flag over --set
    assert config.data == str(tmp_path) and config.iterations == preset.iterations


def test_bad_configs_name_the_field():
    with pytest.raises(TrainingError, match="unknown preset 'normal-cube'.*normal-box"):
        load_preset("normal-cube")
    with pytest.raises(TrainingError, match="unknown setting.*batchsize"):
        load_preset("smoke", batchsize=3)
    with pytest.raises(TrainingError, match="space = 'cube'"):
        TrainConfig(space="cube")
    with pytest.raises(TrainingError, match="checkpoint_every = 15 must be a multiple of log_every = 10"):
        TrainConfig(log_every=10, checkpoint_every=15)
    with pytest.raises(TrainingError, match="mse"):
        TrainConfig(loss="mse", positives="latent")


def test_step_batches_are_a_function_of_the_step():
    assert list(StepBatches(2, 4, 3)) == [[6, 7, 8], [9, 10, 11]]
    assert len(StepBatches(2, 4, 3)) == 2


def test_augmented_pairs_are_seeded_per_item_and_leave_the_global_rng_alone(tmp_path):
    from conftest import write_fake_split

    write_fake_split(tmp_path, "train", n=20, size=24)
    pairs = AugmentedPairs(ThreeDIdent(tmp_path, "train"), seed=3)
    state = torch.get_rng_state()
    a = pairs.__getitems__([0, 1])
    assert torch.equal(torch.get_rng_state(), state)
    b = pairs.__getitems__([0, 1])
    assert all(torch.equal(u, v) for u, v in zip(a[0], b[0], strict=True))
    x1, x2, z, z_pos = a[0]
    assert x1.shape == (3, 24, 24) and not torch.equal(x1, x2) and torch.equal(z, z_pos)
    assert 0 <= float(x1.min()) and float(x1.max()) <= 1
    assert not np.array_equal(a[0][0].numpy(), a[1][0].numpy())


def test_every_source_yields_named_batches_and_a_step_encodes_anchors_then_positives(tmp_path):
    from conftest import write_fake_split
    from torch.utils.data import DataLoader

    from ident3d.baselines.positives import AnchorBatch, Anchors, collate_batch
    from ident3d.baselines.train import training_batch
    from ident3d.pairs import PairBatch

    write_fake_split(tmp_path, "train", n=20, size=24)
    dataset = ThreeDIdent(tmp_path, "train")
    pairs = next(iter(DataLoader(AugmentedPairs(dataset, seed=3), batch_size=4, collate_fn=collate_batch)))
    anchors = next(iter(DataLoader(Anchors(dataset, seed=3), batch_size=4, collate_fn=collate_batch)))
    assert isinstance(pairs, PairBatch) and isinstance(anchors, AnchorBatch)
    x, z = training_batch(pairs)
    assert torch.equal(x, torch.cat([pairs.x, pairs.x_pos])) and z is pairs.z and x.shape == (8, 3, 24, 24)
    x, z = training_batch(anchors)
    assert x is anchors.x and z is anchors.z and x.shape == (4, 3, 24, 24)


def test_cosine_schedule_decays_to_zero_and_fixes_the_length_of_a_run():
    from ident3d.baselines.config import resume_differences
    from ident3d.baselines.train import lr_factor

    cosine = TrainConfig(lr_schedule="cosine", iterations=100)
    assert lr_factor(cosine, 0) == 1.0 and lr_factor(cosine, 50) == pytest.approx(0.5)
    assert lr_factor(cosine, 99) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.99)))
    assert lr_factor(TrainConfig(iterations=100), 99) == 1.0
    assert resume_differences(TrainConfig(iterations=100), TrainConfig(iterations=200)) == []
    assert resume_differences(cosine, TrainConfig(lr_schedule="cosine", iterations=200))  # refused
    with pytest.raises(TrainingError, match="lr_schedule"):
        TrainConfig(lr_schedule="step")


@pytest.mark.parametrize("name", [n for n in preset_names() if "-isotropic" in n])
def test_an_isotropic_control_differs_from_its_aninfonce_preset_in_the_loss_only(name):
    from dataclasses import asdict

    control, model = asdict(load_preset(name)), asdict(load_preset(name.replace("-isotropic", "")))
    assert {k for k in control if control[k] != model[k]} == {"preset", "loss"}
    assert (control["loss"], model["loss"]) == ("aninfonce-isotropic", "aninfonce")
