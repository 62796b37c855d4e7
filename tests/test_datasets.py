import numpy as np
import pytest
import torch
from conftest import write_fake_split
from torch.utils.data import DataLoader
from torchvision.transforms import ToTensor

from ident3d.datasets import ThreeDIdent
from ident3d.errors import DatasetError
from ident3d.latents import sample_uniform
from ident3d.packing import pack_split
from ident3d.pairs import ContrastivePairs, build_index


@pytest.mark.parametrize("with_manifest", [True, False])
def test_both_layouts_load(tmp_path, with_manifest):
    write_fake_split(tmp_path, "test", n=12, manifest=with_manifest)
    ds = ThreeDIdent(tmp_path, "test", transform=ToTensor(), target_transform=lambda t: t * 2)
    assert len(ds) == 12 and ds.padding == 2
    image, target = ds[3]
    assert image.shape == (3, 16, 16) and image.dtype == torch.float32
    raw = np.load(tmp_path / "test/raw_latents.npy")
    torch.testing.assert_close(target, torch.from_numpy(raw[3]) * 2)
    text = repr(ds)
    assert "Number of datapoints: 12" in text and "Split: test" in text
    assert ("v2" if with_manifest else "no manifest") in text
    mean, std = ds.channel_stats()
    assert len(mean) == 3 and all(0 < s < 1 for s in std)
    assert ds.normalize()(image).shape == image.shape


def test_missing_and_corrupt_images_raise_dataset_error(fake_split):
    ds = ThreeDIdent(fake_split)
    path = ds.image_path(7)
    path.unlink()
    with pytest.raises(DatasetError, match=str(path).replace(".", r"\.")):
        ds[7]
    ds.image_path(8).write_bytes(b"not a png")
    with pytest.raises(DatasetError, match="cannot be decoded"):
        ds[8]
    with pytest.raises(DatasetError, match="not a 3DIdent split"):
        ThreeDIdent(fake_split, "nonexistent")


def test_packed_and_png_give_identical_tensors(fake_split):
    png = ThreeDIdent(fake_split, transform=ToTensor())
    expected = [png[i][0] for i in range(len(png))]
    pack_split(fake_split, "train", progress=False)
    packed = ThreeDIdent(fake_split, transform=ToTensor())
    assert packed.is_packed and packed.manifest["packed"]["shape"] == [50, 16, 16, 3]
    stamp = packed.layout.packed.stat().st_mtime_ns
    pack_split(fake_split, "train", progress=False)  # already packed: a no-op
    assert packed.layout.packed.stat().st_mtime_ns == stamp
    for i in range(len(packed)):
        torch.testing.assert_close(packed[i][0], expected[i], rtol=0, atol=0)
    np.testing.assert_array_equal(packed.load_batch(np.array([5, 1, 5])),
                                  np.stack([png.load_array(i) for i in (5, 1, 5)]))


def test_pack_a_published_layout_writes_a_manifest(tmp_path):
    write_fake_split(tmp_path, "train", n=10, manifest=False)
    pack_split(tmp_path, "train", progress=False)
    ds = ThreeDIdent(tmp_path)
    assert ds.is_packed and ds.variant == "legacy" and len(ds.manifest["files"]) == 10


def collect(pairs, **loader_kw):
    loader = DataLoader(pairs, batch_size=8, **loader_kw)
    return [torch.cat([b[k] for b in loader]) for k in range(4)]


@pytest.mark.slow
def test_pairs_identical_for_any_worker_count(fake_split):
    pairs = ContrastivePairs(ThreeDIdent(fake_split), scale=0.3, seed=11, epoch_length=40)
    reference = collect(pairs, num_workers=0)
    for ctx in ("fork", "spawn"):
        other = collect(pairs, num_workers=2, multiprocessing_context=ctx)
        for a, b in zip(reference, other, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert reference[0].shape == (40, 3, 16, 16) and reference[2].shape == (40, 10)
    # Same item through __getitem__ agrees with the batched path.
    x, x_pos, z, z_pos = pairs[5]
    torch.testing.assert_close(z_pos, reference[3][5])
    pairs.set_epoch(1)
    assert not torch.equal(collect(pairs)[2], reference[2])
    assert pairs._index is not None and pairs.__getstate__()["_index"] is None


def test_positive_is_never_the_anchor_and_latents_match_images(fake_split):
    ds = ThreeDIdent(fake_split)
    pairs = ContrastivePairs(ds, scale=0.05, seed=0)
    anchor, positive = pairs.sample_indices(np.arange(200))
    assert (anchor != positive).all()
    x, x_pos, z, z_pos = pairs[0]
    a, p = pairs.sample_indices(np.array([0]))
    torch.testing.assert_close(z, torch.from_numpy(ds.latents[a[0]]))
    expected = torch.from_numpy(ds.load_array(int(a[0])).copy()).permute(2, 0, 1) / 255
    torch.testing.assert_close(x, expected)


class LatentsOnly:
    """Just enough of a dataset for latent-space statistics of many pairs."""

    def __init__(self, n, seed=0):
        self.latents = sample_uniform(n, seed)

    def __len__(self):
        return len(self.latents)


@pytest.mark.slow
def test_spread_grows_with_scale_and_pre_snap_anchors_inflate_it():
    data = LatentsOnly(50000)
    spread = {s: ContrastivePairs(data, scale=s).effective_conditional(4000).mean()
              for s in (0.05, 0.2, 0.5)}
    assert spread[0.05] < spread[0.2] < spread[0.5]
    corrected = ContrastivePairs(data, scale=0.1).effective_conditional(4000)
    pre_snap = ContrastivePairs(data, scale=0.1, anchor="pre-snap").effective_conditional(4000)
    assert pre_snap.mean() > 1.3 * corrected.mean()
    with pytest.warns(DeprecationWarning, match='pass anchor="pre-snap"'):
        old = ContrastivePairs(data, scale=0.1, legacy=True).effective_conditional(4000)
    assert np.array_equal(old, pre_snap)
    with pytest.raises(DatasetError, match="anchor='before'; expected one of snapped, pre-snap"):
        ContrastivePairs(data, anchor="before")
    pairs = ContrastivePairs(data, scale=np.r_[[0.05] * 5, [0.5] * 5])
    per_latent = pairs.effective_conditional(4000)
    assert per_latent[:5].max() < per_latent[5:].min()
    anchor, positive = pairs.sample_indices(np.arange(1000))
    assert np.abs(data.latents[positive]).max() <= 1


def test_ivf_recall_against_flat():
    z = sample_uniform(50000, 0)
    queries = sample_uniform(2000, 1)
    _, exact = build_index(z, "flat").search(queries, 1)
    _, approx = build_index(z, "ivf").search(queries, 1)
    assert (exact[:, 0] == approx[:, 0]).mean() >= 0.95


def test_bad_pair_arguments(fake_split):
    ds = ThreeDIdent(fake_split)
    with pytest.raises(DatasetError, match="unknown index"):
        ContrastivePairs(ds, index="hnsw")
    with pytest.raises(ValueError, match="one per latent"):
        ContrastivePairs(ds, scale=[0.1, 0.2])


def test_top_level_exports_and_negative_indices(tmp_path):
    import ident3d

    write_fake_split(tmp_path, "train", n=9)
    ds = ident3d.ThreeDIdent(tmp_path, "train")
    np.testing.assert_array_equal(ds.load_array(-1), ds.load_array(8))
    torch.testing.assert_close(ds[-2][1], ds[7][1])
    with pytest.raises(IndexError):
        ds.load_array(-10)
    assert ident3d.ContrastivePairs.__name__ == "ContrastivePairs" and callable(ident3d.evaluate)
    assert ident3d.PairLoader.__module__ == "ident3d.pairs"
    assert ident3d.RenderedPairs.__name__ == "RenderedPairs"
    with pytest.raises(AttributeError):
        ident3d.NoSuchThing  # noqa: B018


@pytest.mark.slow
@pytest.mark.parametrize("ctx", ["fork", "spawn"])
@pytest.mark.parametrize("first_call", [True, False])
def test_set_epoch_reaches_persistent_workers(fake_split, ctx, first_call):
    """With or without set_epoch(0) before the workers start: each epoch draws its own pairs."""
    pairs = ContrastivePairs(ThreeDIdent(fake_split), scale=0.3, seed=5, epoch_length=16)
    loader = DataLoader(pairs, batch_size=8, num_workers=2, persistent_workers=True,
                        multiprocessing_context=ctx)
    seen = []
    for epoch in range(3):
        if epoch or first_call:
            pairs.set_epoch(epoch)
        seen.append(torch.cat([z for _, _, z, _ in loader]))
    for epoch in range(3):  # the same pairs as a fresh loader without workers gives for that epoch
        pairs.set_epoch(epoch)
        torch.testing.assert_close(seen[epoch], collect(pairs)[2], rtol=0, atol=0)
    assert not torch.equal(seen[0], seen[1]) and not torch.equal(seen[1], seen[2])


def test_pairs_apply_their_transform_seeded_per_item_and_refuse_a_dropped_one(fake_split):
    from torchvision.transforms import v2

    jitter = v2.Compose([v2.RandomResizedCrop(16, scale=(0.3, 1.0), antialias=True),
                         v2.RandomHorizontalFlip()])
    plain = ContrastivePairs(ThreeDIdent(fake_split), scale=0.3, seed=2, epoch_length=16)
    pairs = ContrastivePairs(ThreeDIdent(fake_split), scale=0.3, seed=2, epoch_length=16, transform=jitter)
    state = torch.get_rng_state()
    pairs.__getitems__(list(range(8)))
    assert torch.equal(torch.get_rng_state(), state)  # the caller's generator is left alone
    reference = collect(pairs)
    torch.testing.assert_close(reference[2], collect(plain)[2], rtol=0, atol=0)  # same latents
    assert not torch.equal(reference[0], collect(plain)[0])  # transformed images
    assert not torch.equal(reference[0], reference[1])
    for a, b in zip(reference, collect(pairs, num_workers=2), strict=True):  # seeded: workers agree
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(DatasetError, match="would drop the transform.*transform=..."):
        ContrastivePairs(ThreeDIdent(fake_split, transform=ToTensor()))


def test_uint8_batches_are_the_float_batches_before_conversion(fake_split):
    floats = collect(ContrastivePairs(ThreeDIdent(fake_split), seed=4, epoch_length=16))
    raw = collect(ContrastivePairs(ThreeDIdent(fake_split), seed=4, epoch_length=16, uint8=True))
    assert raw[0].dtype == torch.uint8 and raw[0].shape == floats[0].shape
    for k in (0, 1):
        torch.testing.assert_close(raw[k].float().div_(255), floats[k], rtol=0, atol=0)
    torch.testing.assert_close(raw[2], floats[2], rtol=0, atol=0)
