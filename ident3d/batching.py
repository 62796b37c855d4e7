"""Image batches that cost one pass over memory, and a collate that does not copy them again.

A batch of B images is gathered from the packed split straight into a (B, H, W, 3) buffer and
shown as a (B, 3, H, W) tensor in channels-last memory, the layout the CPU convolutions and the
evaluator want anyway. Float batches are converted in the same pass (``x / 255`` in float32, the
values of ``ToTensor``). Inside a DataLoader worker the buffer is allocated in shared memory, so
handing it to the main process copies nothing.

``PairDataset.__getitems__`` returns its items as views of such a batch. ``collate_views`` puts
them back together as a view when they are consecutive slices of one tensor, and falls back to
``default_collate`` otherwise: measured in ``python -m benchmarks.loader``, the collate copy was
the largest single cost of a 224 px float batch (docs/facts.md, "Loader speed").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import default_collate, get_worker_info


def empty_batch(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised array, in shared memory when called inside a DataLoader worker.

    Outside workers numpy allocates it: numpy asks the kernel for huge pages on large arrays, which
    makes a fresh 300 MB batch about 6x cheaper to fill than torch's allocator does here.
    """
    if get_worker_info() is None:
        return np.empty(shape, dtype=dtype)
    # what default_collate does for its output: the storage is born shared, nothing is copied later
    dtype = np.dtype(dtype)
    storage = torch.UntypedStorage._new_shared(math.prod(shape) * dtype.itemsize)
    return torch.empty(0, dtype=TORCH_DTYPES[dtype]).set_(storage, 0, shape).numpy()


TORCH_DTYPES = {np.dtype(np.uint8): torch.uint8, np.dtype(np.float32): torch.float32}


def image_batch(dataset: Any, indices: np.ndarray, uint8: bool = False) -> torch.Tensor:
    """Images ``indices`` of a ``ThreeDIdent`` as (B, 3, H, W) in channels-last memory: float32 in
    [0, 1], or with ``uint8`` the raw bytes (convert on the device with ``x.float().div_(255)``)."""
    indices = np.asarray(indices, dtype=np.int64)
    shape = (len(indices), *dataset.image_shape)
    raw = dataset.load_batch(indices, out=empty_batch(shape, np.uint8) if uint8 else None)
    if uint8:
        return torch.from_numpy(raw).permute(0, 3, 1, 2)
    # float32(x) / 255 correctly rounded, as torch's x.float().div_(255); numpy's loop is faster here
    images = np.divide(raw, np.float32(255.0), out=empty_batch(shape, np.float32), dtype=np.float32)
    return torch.from_numpy(images).permute(0, 3, 1, 2)


def collate_views(items: Sequence[Sequence[Any]]) -> list[Any]:
    """``default_collate`` for tuples of tensors, returning a view instead of a copy for every
    field whose items are consecutive equally strided slices of one tensor."""
    batch = []
    for column in zip(*items, strict=True):
        view = _stacked_view(column)
        batch.append(default_collate(list(column)) if view is None else view)
    return batch


def _stacked_view(column: Sequence[Any]) -> torch.Tensor | None:
    first = column[0]
    if not all(isinstance(t, torch.Tensor) for t in column):
        return None
    if len(column) == 1:
        return first.unsqueeze(0)
    step = column[1].storage_offset() - first.storage_offset()
    pointer = first.untyped_storage().data_ptr()
    extent = 1 + sum((size - 1) * stride for size, stride in zip(first.shape, first.stride(), strict=True))
    if step < extent:  # overlapping or reversed items: not a slice of a batch
        return None
    for k, t in enumerate(column):
        if (t.untyped_storage().data_ptr() != pointer or t.shape != first.shape or t.dtype != first.dtype
                or t.stride() != first.stride() or t.storage_offset() != first.storage_offset() + k * step):
            return None
    return first.as_strided((len(column), *first.shape), (step, *first.stride()), first.storage_offset())

