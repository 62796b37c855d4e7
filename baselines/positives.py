"""Where training batches come from: latent-conditional pairs (snapped by FAISS, or rendered exactly),
SimCLR augmentations, or anchors only.

Each source maps an item number to one training example with randomness drawn only from
``(seed, item)``, so batch t of a run is always the same items: resuming at step t needs no
sampler state, and the number of DataLoader workers does not change the data.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from ident3d.batching import collate_views, image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.errors import TrainingError
from ident3d.extras import require
from ident3d.pairs import ContrastivePairs, PairBatch, RenderedPairs, pair_batch, seeded

v2 = require("torchvision.transforms.v2")  # the baselines extra

SOURCES = ("latent", "rendered", "augment", "anchors")


class StepBatches(Sampler[list[int]]):
    """Batch t holds item numbers t*B ... (t+1)*B - 1, for steps ``start`` to ``stop - 1``; with
    ``shard`` (rank, ranks) a rank's equal slice of each, in rank order (``baselines.distributed``)."""

    def __init__(self, start: int, stop: int, batch_size: int, shard: tuple[int, int] = (0, 1)) -> None:
        self.start, self.stop, self.batch_size, self.shard = start, stop, batch_size, shard

    def __len__(self) -> int:
        return max(0, self.stop - self.start)

    def __iter__(self) -> Iterator[list[int]]:
        b = self.batch_size
        rank, ranks = self.shard
        part = b // ranks
        for step in range(self.start, self.stop):
            first = step * b + rank * part
            yield list(range(first, first + part))


def simclr_augmentation(size: int) -> torch.nn.Module:
    """SimCLR's recipe (Chen et al., 2020) on float images in [0, 1]."""
    return v2.Compose([
        v2.RandomResizedCrop(size, scale=(0.08, 1.0), antialias=True),
        v2.RandomHorizontalFlip(),
        v2.RandomApply([v2.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8),
        v2.RandomGrayscale(p=0.2),
    ])


class AnchorBatch(NamedTuple):
    """A batch of anchors without positives: images (B, 3, H, W) and their latents (B, k)."""

    x: torch.Tensor
    z: torch.Tensor


def collate_batch(items: Sequence[tuple[torch.Tensor, ...]]) -> PairBatch | AnchorBatch:
    """Items of four fields make a ``PairBatch`` (``ident3d.pairs.pair_batch``: its images the halves of
    one buffer, which the DataLoader's ``pin_memory`` pins once), of two an ``AnchorBatch``."""
    if len(items[0]) == len(PairBatch._fields):
        return pair_batch(items)
    return AnchorBatch(*collate_views(items))


class Anchors(Dataset):
    """Items ``(x, z)``: uniformly drawn images with their latents (for the supervised topline)."""

    def __init__(self, dataset: ThreeDIdent, seed: int = 0, uint8: bool = False) -> None:
        self.dataset, self.seed, self.uint8 = dataset, seed, uint8

    def __len__(self) -> int:
        return len(self.dataset)

    def _draw(self, items: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        picks = np.array([np.random.default_rng([self.seed, int(i)]).integers(len(self.dataset))
                          for i in items])
        images = image_batch(self.dataset, picks, self.uint8)
        return images, torch.from_numpy(self.dataset.latents[picks])

    def __getitems__(self, items: list[int]) -> list[tuple[torch.Tensor, ...]]:
        images, z = self._draw(items)
        return list(zip(images, z, strict=True))

    def __getitem__(self, item: int) -> tuple[torch.Tensor, ...]:
        return self.__getitems__([item])[0]


class AugmentedPairs(Anchors):
    """Items ``(x1, x2, z, z)``: two SimCLR augmentations of one uniformly drawn image."""

    def __init__(self, dataset: ThreeDIdent, seed: int = 0) -> None:
        super().__init__(dataset, seed)
        self.augment = simclr_augmentation(dataset.image_shape[0])

    def _views(self, image: torch.Tensor, item: int) -> tuple[torch.Tensor, torch.Tensor]:
        return seeded(lambda x: (self.augment(x), self.augment(x)), image, (self.seed, item, 1))

    def __getitems__(self, items: list[int]) -> list[tuple[torch.Tensor, ...]]:
        images, z = self._draw(items)
        return [(*self._views(images[k], int(i)), z[k], z[k]) for k, i in enumerate(items)]


def pair_source(kind: str, dataset: ThreeDIdent, *, seed: int, conditional: str = "normal",
                scale: float | list[float] = 0.1, index: str = "flat", uint8: bool = False) -> Dataset:
    """The training examples of ``kind``; ``uint8`` delivers uint8 images (not for ``augment``,
    whose colour jitter is defined on floats)."""
    if kind == "latent":
        return ContrastivePairs(dataset, conditional=conditional, scale=scale, index=index,
                                seed=seed, uint8=uint8)
    if kind == "rendered":
        return RenderedPairs(dataset, seed=seed, uint8=uint8)
    if kind == "augment":
        return AugmentedPairs(dataset, seed=seed)
    if kind == "anchors":
        return Anchors(dataset, seed=seed, uint8=uint8)
    raise TrainingError(f"unknown positives {kind!r}; expected one of {', '.join(SOURCES)}")
