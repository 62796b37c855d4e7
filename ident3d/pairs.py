"""Positive pairs for contrastive training: latent conditionals snapped to rendered latents, or
pairs rendered exactly (``RenderedPairs``).

Zimmermann et al. (ICML 2021), section 6: an anchor latent is drawn uniformly, a positive from a
conditional around it, and both are replaced by their nearest neighbours among the rendered
latents (FAISS, L2 on raw latents). Here the positive is drawn around the *returned* anchor, which
narrows the realised spread; ``anchor="pre-snap"`` draws it around the anchor before snapping, as
the original did. Either way snapping widens it: in 10 dimensions the nearest rendered latent is far away, so
with 0.1 asked the realised per-latent std of ``z_pos - z`` is about 0.29 at 3,000 rendered latents,
0.25 at 20,000 and 0.21 at 100,000 (pre-snap: 0.40, 0.33, 0.29), and asked scales below about 0.1 all
come out alike (docs/facts.md, "Positive pairs"; ``effective_conditional`` measures it). A paired
split rendered with ``ident3d render --pairs`` draws each positive from the asked conditional
truncated to the latent range (so only wide scales come out narrower).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from ident3d.batching import collate_views, image_batch
from ident3d.datasets import ThreeDIdent
from ident3d.errors import DatasetError
from ident3d.extras import require
from ident3d.latents import broadcast_scale, conditional_distribution, conditional_from_uniform

INDEX_KINDS = ("flat", "ivf")
ANCHORS = ("snapped", "pre-snap")  # the positive is drawn around the snapped anchor, or before snapping
# The original used nprobe 10; measured recall@1 against flat at 50,000 latents is 0.949 there and
# 0.982 with these values (0.988 at 250,000), for about 1.5x the search time.
IVF_PARAMETERS = "nprobe=16,quantizer_efSearch=32"


def build_index(latents: np.ndarray, kind: str = "flat", use_gpu: bool | None = None) -> Any:
    """Exact ``IndexFlatL2`` or approximate ``IVF<nlist>_HNSW32,Flat`` over the latents.

    The IVF parameters go through ``faiss.ParameterSpace``: faiss 1.15 refuses the original's
    ``efSearch`` attribute. nlist is 1024 as in the original, fewer for small datasets (FAISS
    wants about 39 training points per list).
    """
    faiss = require("faiss")
    x = np.ascontiguousarray(latents, dtype=np.float32)
    d = x.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatL2(d)
    elif kind == "ivf":
        nlist = int(min(1024, max(1, len(x) // 39)))
        index = faiss.index_factory(d, f"IVF{nlist}_HNSW32,Flat")
        index.train(x)
        faiss.ParameterSpace().set_index_parameters(index, IVF_PARAMETERS)
    else:
        raise DatasetError(f"unknown index {kind!r}; expected one of {', '.join(INDEX_KINDS)}")
    index.add(x)
    if use_gpu is None:
        use_gpu = hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0
    if use_gpu:
        index = faiss.index_cpu_to_all_gpus(index)
    return index


TRANSFORM_STREAM = 2  # key of a pair's transform stream, after (seed, epoch, item)
CLASS_WEIGHT = 100.0  # index weight of a class latent: larger than any distance of continuous latents


def seeded(transform: Callable[[torch.Tensor], torch.Tensor], image: torch.Tensor,
           key: tuple[int, ...]) -> torch.Tensor:
    """``transform(image)`` with torch's global generator seeded from ``key`` and restored after:
    random torchvision transforms then give the same result for any number of workers."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(np.random.default_rng(list(key)).integers(2**62)))
        return transform(image)


class PairDataset(Dataset):
    """What every source of positive pairs shares: a batch is one read of the anchors' and
    positives' images, chosen by the subclass's ``sample_indices``."""

    dataset: ThreeDIdent
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None
    uint8: bool = False  # deliver uint8 images; the training device converts them
    _epoch: torch.Tensor

    def __new__(cls, *args: object, **kwargs: object) -> PairDataset:
        # The epoch lives in shared memory from the start, so DataLoader workers started before any
        # set_epoch call (persistent ones included, fork or spawn) see every later change.
        pairs = super().__new__(cls)
        pairs._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()
        return pairs

    def sample_indices(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    @property
    def epoch(self) -> int:
        return int(self._epoch[0])

    def set_epoch(self, epoch: int) -> None:
        """Draw the pairs of ``epoch`` from now on, in this process and in every DataLoader worker
        (persistent ones included); the first epoch is 0 without any call."""
        self._epoch[0] = int(epoch)

    def __getitems__(self, items: list[int]) -> list[tuple[torch.Tensor, ...]]:
        anchor, positive = self.sample_indices(np.asarray(items))
        images = image_batch(self.dataset, np.concatenate([anchor, positive]), self.uint8)
        z = torch.from_numpy(self.dataset.latents[anchor])
        z_pos = torch.from_numpy(self.dataset.latents[positive])
        b = len(anchor)
        if self.transform is not None:
            # anchor (side 0) and positive (side 1) of an item draw independently
            epoch = self.epoch
            images = torch.stack([seeded(self.transform, images[k],
                                         (self.seed, epoch, int(items[k % b]), TRANSFORM_STREAM, k // b))
                                  for k in range(2 * b)])
        return [(images[k], images[b + k], z[k], z_pos[k]) for k in range(b)]

    def _check_transform(self, transform: Callable[[torch.Tensor], torch.Tensor] | None) -> None:
        if getattr(self.dataset, "transform", None) is not None:
            raise DatasetError(
                f"{type(self).__name__} reads image batches directly and would drop the transform of "
                f"the ThreeDIdent it wraps ({self.dataset.transform!r}). Fix: build ThreeDIdent without "
                f"transform and pass it as {type(self).__name__}(..., transform=...); it is applied to "
                "each float image (3, H, W) in [0, 1], seeded per item.")
        self.transform = transform

    def __getitem__(self, item: int) -> tuple[torch.Tensor, ...]:
        return self.__getitems__([item])[0]

    def differences(self, n: int = 10000) -> np.ndarray:
        """``z_pos - z`` for ``n`` items of the current epoch, one row per pair."""
        anchor, positive = self.sample_indices(np.arange(n))
        z = self.dataset.latents
        return z[positive] - z[anchor]

    def effective_conditional(self, n: int = 10000) -> np.ndarray:
        """Realised per-latent std of ``z_pos - z`` over ``n`` items (``differences``)."""
        return self.differences(n).std(axis=0)


class ContrastivePairs(PairDataset):
    """Items ``(x, x_pos, z, z_pos)``: two images (float32 (3, H, W) in [0, 1]) and their latents.

    Randomness of item ``i`` comes only from ``(seed, epoch, i)``, so pairs do not depend on the
    number of DataLoader workers or the batch size. With a DataLoader, a batch is fetched through
    ``__getitems__``: one FAISS search per batch, one read of the packed images.

    Args:
        dataset: the rendered split to draw pairs from.
        conditional: the positive's distribution around the anchor (``normal``, ``laplace``, ``gennorm``).
        scale: one scale, or one per latent.
        beta: the exponent of ``gennorm``.
        index: the FAISS index (``flat``: exact; ``ivf``: approximate, for millions of images).
        epoch_length: pairs per epoch (default: one per image).
        seed: the seed of every pair's stream.
        anchor: ``snapped`` (the positive is drawn around the anchor's rendered latents) or
            ``pre-snap`` (around the anchor's unsnapped draw, as the original code).
        transform: applied to each image tensor (in a worker).
        uint8: return images as uint8 (divide by 255 on the device).

    Example:
        ```python
        from ident3d import ContrastivePairs, ThreeDIdent

        pairs = ContrastivePairs(ThreeDIdent("data/preview", "train"), scale=0.1, seed=0)
        x, x_pos, z, z_pos = pairs[0]  # (3, H, W) images in [0, 1] and their latents
        ```
    """

    def __init__(self, dataset: ThreeDIdent, conditional: str = "normal",
                 scale: float | np.ndarray = 0.1, beta: float | None = None, index: str = "flat",
                 epoch_length: int | None = None, seed: int = 0, anchor: str = "snapped",
                 transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
                 uint8: bool = False, legacy: bool | None = None) -> None:
        if legacy is not None:  # the old name of anchor="pre-snap"
            import warnings

            warnings.warn('ContrastivePairs(legacy=...) is deprecated: pass anchor="pre-snap" (the '
                          "original's positives) or anchor=\"snapped\"", DeprecationWarning, stacklevel=2)
            anchor = "pre-snap" if legacy else "snapped"
        if anchor not in ANCHORS:
            raise DatasetError(f"anchor={anchor!r}; expected one of {', '.join(ANCHORS)}: where the positive "
                               "is drawn around")
        conditional_distribution(conditional, beta)  # validate now, not in a worker
        self.scale = broadcast_scale(scale, dataset.latents.shape[1])
        if index not in INDEX_KINDS:
            raise DatasetError(f"unknown index {index!r}; expected one of {', '.join(INDEX_KINDS)}")
        self.dataset, self.conditional, self.beta, self.uint8 = dataset, conditional, beta, uint8
        self._check_transform(transform)
        self.index_kind, self.seed, self.anchor = index, seed, anchor
        self.epoch_length = len(dataset) if epoch_length is None else int(epoch_length)
        if self.epoch_length < 1:
            raise DatasetError(f"epoch_length = {epoch_length}; expected at least 1 pair per epoch")
        if len(dataset) < 2:
            raise DatasetError(f"{dataset.layout.folder}: {len(dataset)} image(s); positive pairs need at "
                               "least 2 (the positive is never the anchor itself). Fix: render more.")
        self._index: Any = None
        # Class latents (object shape): drawn uniformly for the anchor, kept for the positive, and
        # weighted in the index so that the nearest rendered latent always has the same class.
        variant = getattr(dataset, "variant_spec", None)
        self._classes = [(f.index, len(f.classes)) for f in variant.factors if f.is_class] if variant else []
        self._weight = np.ones(dataset.latents.shape[1], np.float32)
        self._weight[[c for c, _ in self._classes]] = CLASS_WEIGHT

    def __len__(self) -> int:
        return self.epoch_length

    def __repr__(self) -> str:
        scale = self.scale[0] if np.ptp(self.scale) == 0 else self.scale.tolist()
        where = getattr(getattr(self.dataset, "layout", None), "folder", type(self.dataset).__name__)
        return (f"ContrastivePairs({len(self.dataset)} images of {where}, "
                f"{self.conditional} scale {scale}, index {self.index_kind}, seed {self.seed}"
                f"{', anchor pre-snap' if self.anchor == 'pre-snap' else ''})")

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_index"] = None  # never pickled: each worker builds its own
        return state

    @property
    def index(self) -> Any:
        if self._index is None:
            if get_worker_info() is not None:
                require("faiss").omp_set_num_threads(1)  # workers already run in parallel
            latents = self.dataset.latents * self._weight if self._classes else self.dataset.latents
            self._index = build_index(latents, self.index_kind)
        return self._index

    def _uniforms(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = self.dataset.latents.shape[1]
        u = np.stack([np.random.default_rng([self.seed, self.epoch, int(i)]).random(2 * d)
                      for i in items])
        return u[:, :d], u[:, d:]

    def sample_indices(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rendered indices of anchor and positive for each item, with two FAISS searches.

        An item number only seeds that item's random stream, so any integer is valid here.
        """
        u_anchor, u_pos = self._uniforms(items)
        z = self.dataset.latents
        query = (2.0 * u_anchor - 1.0).astype(np.float32)
        for column, k in self._classes:
            query[:, column] = np.floor(u_anchor[:, column] * k)
        _, found = self.index.search(query * self._weight, 1)
        anchor = found[:, 0]
        centre = query if self.anchor == "pre-snap" else z[anchor]
        positive_query = conditional_from_uniform(centre, u_pos, self.conditional, self.scale,
                                                  self.beta).astype(np.float32)
        for column, _ in self._classes:
            positive_query[:, column] = centre[:, column]
        _, found = self.index.search(positive_query * self._weight, 2)
        positive = np.where(found[:, 0] == anchor, found[:, 1], found[:, 0])
        return anchor, positive


class RenderedPairs(PairDataset):
    """Items ``(x, x_pos, z, z_pos)`` from a paired split (``ident3d render --pairs``): the positive
    was rendered from latents drawn exactly from the conditional around the anchor, no snapping.

    Item ``i`` is the pair drawn with the stream ``(seed, epoch, i)``, so, as for
    ``ContrastivePairs``, any integer is a valid item and pairs do not depend on the workers.

    Args:
        dataset: a split rendered with ``ident3d render --pairs``.
        epoch_length: pairs per epoch (default: the split's pair count).
        seed: the seed of every pair's stream.
        transform: applied to each image tensor (in a worker).
        uint8: return images as uint8.

    Example:
        ```python
        from ident3d import RenderedPairs, ThreeDIdent

        pairs = RenderedPairs(ThreeDIdent("data/paired", "train"), seed=0)
        x, x_pos, z, z_pos = pairs[0]  # an anchor and the positive rendered for it
        ```
    """

    def __init__(self, dataset: ThreeDIdent, epoch_length: int | None = None, seed: int = 0,
                 transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
                 uint8: bool = False) -> None:
        record = (dataset.manifest or {}).get("pairs")
        if not record or len(dataset) % 2:
            raise DatasetError(f"{dataset.layout.folder}: not a paired split (its manifest has no 'pairs' "
                               "record). Fix: render one with `ident3d render --pairs --n PAIRS ...`, or "
                               "use ContrastivePairs for nearest-neighbour positives.")
        self.dataset, self.record, self.seed, self.uint8 = dataset, record, seed, uint8
        self._check_transform(transform)
        self.n_pairs = len(dataset) // 2
        self.epoch_length = self.n_pairs if epoch_length is None else int(epoch_length)
        if self.epoch_length < 1:
            raise DatasetError(f"epoch_length = {epoch_length}; expected at least 1 pair per epoch")

    def __len__(self) -> int:
        return self.epoch_length

    def __repr__(self) -> str:
        record = self.record
        how = (f"style {', '.join(record['style'])} resampled, the rest shared" if record.get("style")
               else f"{record['conditional']} scale {record['scale']}")
        return f"RenderedPairs({self.n_pairs} pairs of {self.dataset.layout.folder}, {how}, seed {self.seed})"

    def sample_indices(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Image indices of anchor and positive for each item."""
        picks = np.array([np.random.default_rng([self.seed, self.epoch, int(i)]).integers(self.n_pairs)
                          for i in items], dtype=np.int64)
        return 2 * picks, 2 * picks + 1

    def differences(self, n: int | None = None) -> np.ndarray:
        """``z_pos - z`` of every pair of the split (``n`` is ignored: the split's pairs are fixed, so
        ``effective_conditional`` is exact rather than an estimate)."""
        z = self.dataset.latents
        return z[1::2] - z[0::2]


class PairBatch(NamedTuple):
    """A batch of positive pairs: anchor and positive images (B, 3, H, W) and their latents (B, k).
    ``PairLoader`` delivers ``x`` and ``x_pos`` as the two halves of one buffer, so a training step
    reads both with ``images()`` without a copy, and ``pin_memory()`` pins that buffer once."""

    x: torch.Tensor
    x_pos: torch.Tensor
    z: torch.Tensor
    z_pos: torch.Tensor

    def images(self) -> torch.Tensor:
        """Anchors, then positives, as one (2B, 3, H, W) tensor: a view when they are the halves of
        one buffer (as ``PairLoader`` and ``pin_memory()`` deliver them), else a concatenation."""
        x, x_pos = self.x, self.x_pos
        follows = (x.untyped_storage().data_ptr() == x_pos.untyped_storage().data_ptr()
                   and x.dtype == x_pos.dtype and x.shape[1:] == x_pos.shape[1:]
                   and x.stride() == x_pos.stride()
                   and x_pos.storage_offset() == x.storage_offset() + len(x) * x.stride(0))
        if follows:
            return x.as_strided((len(x) + len(x_pos), *x.shape[1:]), x.stride(), x.storage_offset())
        return torch.cat([x, x_pos])

    def pin_memory(self) -> PairBatch:
        """The batch in page-locked memory, its images in one pinned buffer, so one non-blocking copy
        moves a step's images to the GPU (the DataLoader's ``pin_memory=True`` calls this)."""
        images = self.images().pin_memory()
        b = len(self.x)
        return PairBatch(images[:b], images[b:], self.z.pin_memory(), self.z_pos.pin_memory())


class PairLoader:
    """Batches ``[x, x_pos, z, z_pos]`` of a ``PairDataset``, equal batch for batch to
    ``DataLoader(pairs, ..., collate_fn=collate_views)`` but faster with workers.

    Workers only draw the pairs (the seeded per-item streams and the FAISS searches, the costly
    part); the main process gathers the images of a packed split in one pass per batch. Images
    made in a worker would have to be written into fresh shared memory, which on this project's
    machine costs more than drawing and reading them (``python -m benchmarks.loader``). With a
    transform, or over PNG files, the images are made in the workers as in a plain DataLoader.
    Keyword arguments go to the DataLoader (``batch_size``, ``batch_sampler``, ``num_workers``,
    ``prefetch_factor``, ``persistent_workers``, ...); ``pin_memory`` pins the finished batch.

    Args:
        pairs: a ``ContrastivePairs`` or ``RenderedPairs``.
        pin_memory: pin each finished batch (for CUDA).
        **dataloader_kwargs: passed to ``torch.utils.data.DataLoader``.

    Example:
        ```python
        from ident3d import ContrastivePairs, PairLoader, ThreeDIdent

        pairs = ContrastivePairs(ThreeDIdent("data/preview", "train"), seed=0)
        for x, x_pos, z, z_pos in PairLoader(pairs, batch_size=256, num_workers=2):
            break  # (B, 3, H, W) float32 images, channels-last, and (B, 10) latents
        ```
    """

    def __init__(self, pairs: PairDataset, pin_memory: bool = False, **dataloader_kwargs: Any) -> None:
        self.pairs, self.pin_memory = pairs, pin_memory
        self.gather_here = pairs.transform is None and pairs.dataset.is_packed
        if self.gather_here:
            self.loader = DataLoader(_Draws(pairs), collate_fn=_index_batch, **dataloader_kwargs)
        else:
            self.loader = DataLoader(pairs, collate_fn=pair_batch, pin_memory=pin_memory,
                                     **dataloader_kwargs)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[PairBatch]:
        if not self.gather_here:
            yield from self.loader
            return
        latents = self.pairs.dataset.latents
        for anchor, positive in self.loader:
            images = image_batch(self.pairs.dataset, np.concatenate([anchor, positive]), self.pairs.uint8)
            b = len(anchor)
            batch = PairBatch(images[:b], images[b:], torch.from_numpy(latents[anchor]),
                              torch.from_numpy(latents[positive]))
            yield batch.pin_memory() if self.pin_memory else batch


class _Draws(Dataset):
    """A PairDataset's items as ``(anchor, positive)`` image indices only."""

    def __init__(self, pairs: PairDataset) -> None:
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitems__(self, items: list[int]) -> list[tuple[int, int]]:
        anchor, positive = self.pairs.sample_indices(np.asarray(items))
        return list(zip(anchor.tolist(), positive.tolist(), strict=True))

    def __getitem__(self, item: int) -> tuple[int, int]:
        return self.__getitems__([item])[0]


def pair_batch(items: Sequence[tuple[torch.Tensor, ...]]) -> PairBatch:
    """Items ``(x, x_pos, z, z_pos)`` as a batch whose images are the halves of one buffer."""
    x, x_pos, z, z_pos = collate_views(items)
    images = torch.cat([x, x_pos])
    return PairBatch(images[:len(x)], images[len(x):], z, z_pos)


def _index_batch(items: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    indices = np.asarray(items, dtype=np.int64).reshape(-1, 2)
    return indices[:, 0], indices[:, 1]
