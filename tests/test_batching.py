"""Image batches in one pass, collates without copies, and the pair loader that gathers in the main
process: the same tensors as the plain per-item path, whatever the workers."""

import numpy as np
import pytest
import torch
from conftest import write_fake_split
from torch.utils.data import DataLoader, default_collate
from torchvision.transforms import ToTensor, v2

from ident3d.batching import collate_views, image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.packing import pack_split
from ident3d.pairs import ContrastivePairs, PairBatch, PairLoader


@pytest.fixture
def splits(tmp_path):
    """The same 40 images as PNG files and packed."""
    for name in ("png", "packed"):
        write_fake_split(tmp_path / name, "train", n=40)
    pack_split(tmp_path / "packed", "train", progress=False)
    return ThreeDIdent(tmp_path / "png"), ThreeDIdent(tmp_path / "packed")


def test_image_batches_are_to_tensor_per_image_in_channels_last_memory(splits):
    png, packed = splits
    picks = np.array([5, 1, 5, -1])
    expected = torch.stack([ToTensor()(png.load_array(int(i)).copy()) for i in picks])
    for dataset in splits:
        floats, raw = image_batch(dataset, picks), image_batch(dataset, picks, uint8=True)
        torch.testing.assert_close(floats, expected, rtol=0, atol=0)
        assert floats.is_contiguous(memory_format=torch.channels_last) and floats.dtype == torch.float32
        assert raw.dtype == torch.uint8
        torch.testing.assert_close(raw.float().div_(255), expected, rtol=0, atol=0)
    with pytest.raises(IndexError, match="out of range for 40 images"):
        packed.load_batch(np.array([3, 40]))


def test_collate_views_returns_the_batch_as_a_view_and_copies_anything_else(splits):
    pairs = ContrastivePairs(splits[1], seed=3, epoch_length=8)
    items = pairs.__getitems__(list(range(8)))
    batch = collate_views(items)
    for got, want in zip(batch, default_collate(items), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert batch[0].data_ptr() == items[0][0].data_ptr()  # no copy
    reordered = items[::-1]  # not consecutive slices: an ordinary stacked copy
    for got, want in zip(collate_views(reordered), default_collate(reordered), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert collate_views(reordered)[0].data_ptr() != items[-1][0].data_ptr()
    mixed = [(t, k) for k, t in enumerate(torch.arange(6.0))]
    assert collate_views(mixed)[1].tolist() == list(range(6))


def batches(loader):
    return [[t.clone() for t in batch] for batch in loader]


def assert_same_batches(a, b):
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        for s, t in zip(x, y, strict=True):
            torch.testing.assert_close(s, t, rtol=0, atol=0)


@pytest.mark.parametrize("uint8", [False, True])
def test_the_pair_loader_gives_the_plain_loaders_batches_for_any_workers_and_epoch(splits, uint8):
    pairs = ContrastivePairs(splits[1], scale=0.3, seed=7, epoch_length=24, uint8=uint8)
    pairs.set_epoch(2)
    reference = batches(DataLoader(pairs, batch_size=8, collate_fn=collate_views))
    for workers in (0, 2):
        loader = PairLoader(pairs, batch_size=8, num_workers=workers)
        assert loader.gather_here and len(loader) == 3
        assert_same_batches(batches(loader), reference)
        first = next(iter(loader))  # named fields, unpacking as before
        assert isinstance(first, PairBatch) and first.z_pos.shape == (8, 10) and first.x is first[0]
    assert reference[0][0].dtype == (torch.uint8 if uint8 else torch.float32)
    pairs.set_epoch(3)
    assert not torch.equal(batches(PairLoader(pairs, batch_size=8))[0][2], reference[0][2])


def test_with_a_transform_or_png_files_the_pair_loader_makes_images_in_the_workers(splits):
    crop = v2.RandomResizedCrop(16, scale=(0.3, 1.0), antialias=True)
    for pairs in (ContrastivePairs(splits[1], seed=1, epoch_length=16, transform=crop),
                  ContrastivePairs(splits[0], seed=1, epoch_length=16)):
        reference = batches(DataLoader(pairs, batch_size=8))
        loader = PairLoader(pairs, batch_size=8, num_workers=2)
        assert not loader.gather_here
        assert_same_batches(batches(loader), reference)


def test_a_steps_images_reach_the_loop_as_one_buffer_and_are_pinned_once(splits, monkeypatch):
    """The training loop reads anchors and positives as one tensor the loader made (no join after it),
    so the one pinned buffer moves to the GPU in one non-blocking copy. CUDA's page-locking needs a
    driver, so a copy stands in for it: what is checked is which buffers there are."""
    from ident3d.baselines.positives import AugmentedPairs, collate_batch
    from ident3d.baselines.train import training_batch

    pinned = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda t: pinned.append(t.shape) or t.clone())
    gathered = ContrastivePairs(splits[1], scale=0.3, seed=7, epoch_length=16)
    on_png = ContrastivePairs(splits[0], seed=1, epoch_length=16)
    augmented = DataLoader(AugmentedPairs(splits[1], seed=0), batch_size=8, collate_fn=collate_batch)
    for loader in (PairLoader(gathered, batch_size=8), PairLoader(on_png, batch_size=8, num_workers=2),
                   augmented):
        batch = next(iter(loader))
        x, _ = training_batch(batch)
        assert x.untyped_storage().data_ptr() == batch.x.untyped_storage().data_ptr()  # joined nothing
        assert torch.equal(x, torch.cat([batch.x, batch.x_pos])) and x.is_contiguous(
            memory_format=torch.channels_last) == batch.x.is_contiguous(memory_format=torch.channels_last)
        again = batch.pin_memory()
        assert pinned[-3] == (16, *batch.x.shape[1:])  # the images once, as one buffer, then z and z_pos
        assert again.images().untyped_storage().data_ptr() == again.x.untyped_storage().data_ptr()
    loader = PairLoader(gathered, batch_size=8, pin_memory=True)
    batch = next(iter(loader))
    assert batch.images().untyped_storage().data_ptr() == batch.x_pos.untyped_storage().data_ptr()


def test_a_png_of_another_size_is_named_with_the_fix(splits):
    from PIL import Image

    from ident3d.errors import DatasetError

    png = splits[0]
    Image.new("RGB", (20, 16)).save(png.image_path(7))
    with pytest.raises(DatasetError, match=r"7\.png: 20 x 16 px, the split's images are 16 x 16.*Fix"):
        image_batch(png, np.array([0, 7]))


def test_a_manifest_resolution_the_images_do_not_have_is_refused_before_a_batch_is_allocated(
        tmp_path, monkeypatch):
    """A crafted manifest claiming 4,096 px over 16 px images must not size a batch buffer of
    B x 4096 x 4096 x 3: the first image's header is checked against it first."""
    import json

    import ident3d.batching
    from ident3d.datasets import ThreeDIdent
    from ident3d.errors import DatasetError
    from ident3d.fake_splits import write_fake_split

    folder = write_fake_split(tmp_path, "train", n=4, size=16)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["render_settings"] = {**manifest.get("render_settings", {}), "resolution": 4096}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    allocated = []
    monkeypatch.setattr(ident3d.batching, "empty_batch", lambda shape, dtype: allocated.append(shape))
    dataset = ThreeDIdent(tmp_path, "train")
    for uint8 in (True, False):
        with pytest.raises(DatasetError, match=r"0\.png: 16 x 16 px, the split.s images are 4096 x 4096"):
            image_batch(dataset, np.arange(4), uint8=uint8)
    assert allocated == []
