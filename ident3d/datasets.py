"""``ThreeDIdent``: a dataset over this project's renders or the published layout, with torchvision's
conventions (``transform``, ``target_transform``, ``(image, target)`` items) but not its import: the
core installs and evaluates without torchvision (README, "Install")."""

from __future__ import annotations

import functools
import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

from ident3d.captions import captions
from ident3d.errors import DatasetError, LatentError
from ident3d.extras import require
from ident3d.layout import SplitLayout, padding_width
from ident3d.manifest import channel_stats, image_size_problem, manifest_resolution, read_manifest_and_sha256
from ident3d.readers import read_array, read_regular
from ident3d.variants import split_variant

MAX_CAPTION_BYTES = 1000  # per image: a caption is one sentence
STATS_SAMPLE = 2000  # images used for mean/std when a published split has no manifest
MAX_IMAGE_BYTES = 64 * 2**20  # one image file (a 224 px render is about 100 kB)
KEEP_BYTES = 512 * 2**20  # decoded images an evaluation keeps so that no file is read twice


@dataclass
class ImageReads:
    """What an evaluation read of a split's image files: the sha256 of the bytes each image was decoded
    from (the track's identity proof hashes these instead of reading the files again) and, up to
    ``budget`` bytes, the decoded images themselves (the sandbox's probes and the pixel fingerprint
    take them from here). One read serves the features, the proof and the fingerprint, so all three
    are of the same bytes."""

    budget: int = KEEP_BYTES
    digests: dict[int, str] = field(default_factory=dict)
    images: dict[int, np.ndarray] = field(default_factory=dict)
    kept: int = 0

    def add(self, index: int, data: bytes, image: np.ndarray) -> None:
        self.digests[index] = hashlib.sha256(data).hexdigest()
        if self.kept + image.nbytes <= self.budget:
            image.flags.writeable = False
            self.images[index] = image
            self.kept += image.nbytes


class ThreeDIdent(Dataset):
    """3DIdent images with their raw latents (float32, in [-1, 1]) as targets.

    Reads ``<root>/<split>/`` as written by ``ident3d render`` (with ``manifest.json``) or as
    published on Zenodo (no manifest; image names padded to ceil(log10 N) digits). When the split
    was packed (``ident3d pack``), images come from the memory-mapped ``images.npy`` instead.

    Args:
        root: the dataset root holding one folder per split.
        split: the split folder (``train``, ``test``, ...).
        transform: applied to each PIL image (torchvision convention); None gives the PIL image.
        target_transform: applied to each latent vector.
        download: fetch the published split from Zenodo when ``root/split`` is missing.

    Example:
        ```python
        from ident3d import ThreeDIdent

        train = ThreeDIdent("data/preview", "train")
        image, z = train[0]            # a PIL image and its 10 raw latents in [-1, 1]
        print(len(train), train.image_shape, train.latents.shape)
        ```
    """

    def __init__(self, root: str | Path, split: str = "train",
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False) -> None:
        self.root = str(root)
        self.transform, self.target_transform = transform, target_transform
        self.split = split
        self.layout = SplitLayout(Path(root), split)
        if download and not self.layout.raw_latents.exists():
            from ident3d.download import download_split

            download_split(Path(root), split)
        if not self.layout.raw_latents.exists():
            raise DatasetError(
                f"{self.layout.raw_latents} not found: {self.layout.folder} is not a 3DIdent split. "
                "Fix: render it (`ident3d render`), download it (`ident3d download` or "
                "download=True), or point root at the folder that holds the split.")
        raw = read_array(self.layout.raw_latents, DatasetError, self.layout.repair_command())
        self.manifest: dict[str, Any] | None = None
        self.manifest_sha256: str | None = None  # of the bytes self.manifest was parsed from
        if self.layout.manifest.exists():
            self.manifest, self.manifest_sha256 = read_manifest_and_sha256(self.layout.manifest)
        try:
            self.variant_spec = split_variant(self.manifest)
            self.latents = self.variant_spec.check_raw(raw, str(self.layout.raw_latents)).astype(np.float32)
        except LatentError as error:
            raise DatasetError(f"{error} ({self.layout.repair_command()})") from None
        self.factor_names = self.variant_spec.names  # column j of the latents is factor_names[j]
        if len(self.latents) == 0:
            raise DatasetError(f"{self.layout.raw_latents}: the split is empty (0 rows). "
                               f"Fix: {self.layout.repair_command()}")
        self.padding = self.manifest["padding"] if self.manifest else padding_width(len(self))
        self.resolution = manifest_resolution(self.manifest)  # None: any size up to MAX_IMAGE_SIDE
        self.variant = self.manifest["variant"] if self.manifest else "legacy (no manifest)"
        self.is_packed = bool(self.manifest and "packed" in self.manifest
                              and self.layout.packed.exists())
        self._packed: np.ndarray | None = None
        self.reads: ImageReads | None = None

    def remember_reads(self, budget: int = KEEP_BYTES) -> ImageReads:
        """From now on, record every image file this dataset reads (``ImageReads``): what lets an
        evaluation read each file once. Packed splits read ``images.npy`` and record nothing."""
        self.reads = ImageReads(budget)
        return self.reads

    def __len__(self) -> int:
        return len(self.latents)

    def __repr__(self) -> str:
        source = "packed images.npy" if self.is_packed else "PNG files"
        lines = [f"Number of datapoints: {len(self)}", f"Root location: {self.root}", f"Split: {self.split}",
                 f"Variant: {self.variant}", f"Images: {source}"]
        lines += [f"{name}: {step}" for name, step in (("Transform", self.transform),
                                                      ("Target transform", self.target_transform)) if step]
        return "\n".join([f"Dataset {type(self).__name__}", *("    " + line for line in lines)])

    @property
    def paired(self) -> bool:
        """Whether the split comes in pairs (images 2i and 2i + 1: positive pairs of ``ident3d render
        --pairs``, or a content/style track's pairs), as its manifest records."""
        return bool((self.manifest or {}).get("pairs"))

    @property
    def captions(self) -> list[str]:
        """One templated description per image: the split's ``captions.txt``, or, for splits without
        one (published or older renders), made from the latents the same way (ident3d.captions)."""
        path = self.layout.captions
        if not path.exists():
            return captions(self.variant_spec.scene_params(self.latents))
        try:  # at most MAX_CAPTION_BYTES per image
            lines = read_regular(path, MAX_CAPTION_BYTES * len(self)).decode("utf-8", "replace").splitlines()
        except (OSError, ValueError) as error:
            raise DatasetError(f"{path}: not this split's captions ({error}). Fix: delete it (captions "
                               "are remade from the latents).") from None
        if len(lines) != len(self):
            raise DatasetError(f"{path}: {len(lines)} lines for {len(self)} images. Fix: delete it "
                               "(captions are remade from the latents).")
        return lines

    def image_path(self, index: int) -> Path:
        return self.layout.image(index, self.padding)

    def _packed_array(self) -> np.ndarray:
        # Opened lazily (and dropped when pickled) so DataLoader workers map the file themselves.
        if self._packed is None:
            packed = read_array(self.layout.packed, DatasetError,
                                f"delete it and run `ident3d pack --data {self.root} --split {self.split}`",
                                mmap=True)
            expected = (len(self), *packed.shape[1:])
            if packed.dtype != np.uint8 or packed.ndim != 4 or packed.shape != expected \
                    or packed.shape[-1] != 3:
                raise DatasetError(f"{self.layout.packed}: shape {packed.shape} {packed.dtype}, "
                                   f"expected ({len(self)}, H, W, 3) uint8. Fix: delete it and run "
                                   f"`ident3d pack --data {self.root} --split {self.split}`")
            self._packed = packed
        return self._packed

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_packed"], state["reads"] = None, None  # a worker's reads are its own
        return state

    def load_array(self, index: int) -> np.ndarray:
        """Image ``index`` as uint8 (H, W, 3), RGB; negative indices count from the end."""
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} images")
        index = int(index) % len(self)
        if self.is_packed:
            return np.asarray(self._packed_array()[index])
        if self.reads is not None and index in self.reads.images:
            return self.reads.images[index]
        path = self.image_path(index)
        try:
            data = read_regular(path, MAX_IMAGE_BYTES)
            with Image.open(io.BytesIO(data)) as im:
                wrong = image_size_problem(path, im.size, self.resolution)  # the header, before decoding
                if not wrong:
                    image = np.asarray(im.convert("RGB"))
                    if self.reads is not None:
                        self.reads.add(index, data, image)
                    return image
        except FileNotFoundError:
            raise DatasetError(f"{path} is missing. Fix: {self.layout.repair_command()}") from None
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as error:
            raise DatasetError(f"{path} cannot be decoded ({error}). "
                               f"Fix: {self.layout.repair_command()}") from None
        raise DatasetError(f"{wrong}. Fix: {self.layout.repair_command()}")

    @functools.cached_property
    def image_shape(self) -> tuple[int, int, int]:
        """(H, W, 3) of every image: the packed array's, else the first image's, whose header is held
        to the manifest's resolution before it is decoded (a crafted resolution sizes no buffer)."""
        if self.is_packed:
            return tuple(self._packed_array().shape[1:])
        if len(self) == 0 and self.resolution is not None:
            return (self.resolution, self.resolution, 3)
        return tuple(self.load_array(0).shape)

    def load_batch(self, indices: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Images as uint8 (B, H, W, 3), into ``out`` when given; one gather when packed."""
        indices = np.asarray(indices, dtype=np.int64)
        if len(indices) and not (-len(self) <= indices.min() and indices.max() < len(self)):
            raise IndexError(f"indices {indices.min()}..{indices.max()} out of range for {len(self)} images")
        if out is None:
            out = np.empty((len(indices), *self.image_shape), dtype=np.uint8)
        if self.is_packed:
            # mode "wrap" (indices are checked above) writes straight into out; "raise" buffers it
            return np.take(self._packed_array(), indices, axis=0, out=out, mode="wrap")
        for k, i in enumerate(indices):
            image = self.load_array(int(i))
            if image.shape != out.shape[1:]:
                raise DatasetError(f"{self.image_path(int(i))}: {image.shape[1]} x {image.shape[0]} px, but "
                                   f"the split's images are {out.shape[2]} x {out.shape[1]}. Fix: "
                                   f"{self.layout.repair_command()}")
            out[k] = image
        return out

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image: Any = Image.fromarray(self.load_array(index))
        target: Any = torch.from_numpy(self.latents[index].copy())
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def channel_stats(self) -> tuple[list[float], list[float]]:
        """Per-channel mean and std in [0, 1] units: from the manifest, else from the data."""
        if self.manifest:
            return self.manifest["image_mean"], self.manifest["image_std"]
        n = min(len(self), STATS_SAMPLE)
        picks = np.random.default_rng(0).choice(len(self), size=n, replace=False)
        return channel_stats([self.image_path(int(i)) for i in np.sort(picks)])

    def normalize(self) -> Any:
        """A torchvision ``Normalize`` with this split's own statistics (not the original constants)."""
        mean, std = self.channel_stats()
        return require("torchvision.transforms").Normalize(mean, std)
