"""The baseline encoder of Zimmermann et al. (2021): ResNet18 -> LeakyReLU -> Linear -> output space.

The encoder takes images in [0, 1] (the evaluator's input contract) and applies the training
data's per-channel mean and std itself, so an exported file needs nothing else. It is offered to
the evaluator as the architecture ``resnet18-contrastive`` (an entry point, see ``ident3d.architectures``),
so safetensors weights can be evaluated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from ident3d.errors import SubmissionError, TrainingError
from ident3d.extras import require

ARCH = "resnet18-contrastive"
HIDDEN = 100  # ResNet18's output width in the original


class Box(nn.Module):
    """L-infinity normalisation into the cube [-r, r]^d with a learnable size r (the paper's Box).

    Points inside the cube are kept; points outside are scaled radially onto its faces, so the
    model space is the whole cube, like the latent space.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.size = nn.Parameter(torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = self.size.abs()
        return x * (r / torch.maximum(x.abs().amax(dim=1, keepdim=True), r))


class BoxSigmoid(nn.Module):
    """The original code's box: sigmoid times a learnable per-dimension bound."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.bound = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x) * self.bound


class Sphere(nn.Module):
    """L2 normalisation onto a sphere with a learnable radius."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.radius = nn.Parameter(torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.radius * nn.functional.normalize(x, dim=1)


class UnitSphere(nn.Module):
    """L2 normalisation onto the unit sphere, radius fixed at 1: the AnInfoNCE rows' output (A.1-A.4
    and D.3), as the AnInfoNCE code's ``main_mlp.py`` runs them (``--p 0`` chooses its
    ``fixed_sphere``). The other sphere rows keep the learnable-radius ``sphere``, on which the vMF
    loss and the scores do not depend (tests/test_synthetic.py checks it)."""

    def __init__(self, dim: int) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.normalize(x, dim=1)


class Unbounded(nn.Identity):
    def __init__(self, dim: int) -> None:
        super().__init__()


OUTPUT_SPACES: dict[str, type[nn.Module]] = {
    "box": Box, "box-sigmoid": BoxSigmoid, "sphere": Sphere, "unit-sphere": UnitSphere,
    "unbounded": Unbounded,
}


# "imagenet": ResNet18's own stem (7x7 stride-2 convolution and max-pool), as in the paper at 224 px.
# "small": a 3x3 stride-1 convolution without max-pool, the usual stem for 32 to 64 px images; it
# keeps 4 times as many positions per side through the network at 16 times the cost per image.
STEMS = ("imagenet", "small")


class Encoder(nn.Module):
    """Images (B, 3, H, W) in [0, 1] -> representations (B, latent_dim)."""

    def __init__(self, latent_dim: int = 10, space: str = "box",
                 mean: Sequence[float] = (0.5, 0.5, 0.5), std: Sequence[float] = (0.25, 0.25, 0.25),
                 stem: str = "imagenet") -> None:
        super().__init__()
        if space not in OUTPUT_SPACES:
            raise TrainingError(f"unknown output space {space!r}; "
                                f"expected one of {', '.join(OUTPUT_SPACES)}")
        if stem not in STEMS:
            raise TrainingError(f"unknown stem {stem!r}; expected one of {', '.join(STEMS)}")
        self.latent_dim, self.space_name, self.stem = latent_dim, space, stem
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1))
        # the baselines extra, imported where the backbone is built: reading configs and results needs none
        self.backbone = require("torchvision.models").resnet18(weights=None, num_classes=HIDDEN)
        if stem == "small":
            self.backbone.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
            self.backbone.maxpool = nn.Identity()
        self.head = nn.Sequential(nn.LeakyReLU(), nn.Linear(HIDDEN, latent_dim))
        self.space = OUTPUT_SPACES[space](latent_dim)

    def config(self) -> dict[str, Any]:
        """What ``build_encoder`` needs to rebuild this module (weights and buffers come separately)."""
        return {"latent_dim": self.latent_dim, "space": self.space_name, "stem": self.stem}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std
        return self.space(self.head(self.backbone(x)))


class MLPEncoder(nn.Sequential):
    """The synthetic experiments' encoder (cl-ica ``main_mlp.py``): n -> 10n -> 50n -> 50n -> 50n ->
    50n -> 10n -> n with LeakyReLU (slope 0.01) between the linear layers, then the output space."""

    def __init__(self, n: int = 10, space: str = "unbounded") -> None:
        widths = [n, 10 * n, 50 * n, 50 * n, 50 * n, 50 * n, 10 * n, n]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
            layers.append(nn.Linear(a, b))
            if i < len(widths) - 2:
                layers.append(nn.LeakyReLU())
        super().__init__(*layers, OUTPUT_SPACES[space](n))


MAX_LATENT_DIM = 4096  # a config from a submitted file must not allocate without bound


def build_encoder(config: dict[str, Any]) -> Encoder:
    """Rebuild an Encoder from the config stored in a safetensors file (which may be crafted)."""
    if not isinstance(config, dict):
        raise SubmissionError(f"architecture {ARCH}: config must be a JSON object, got {config!r}")
    dim, space = config.get("latent_dim", 10), config.get("space", "box")
    stem = config.get("stem", "imagenet")
    if not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= MAX_LATENT_DIM:
        raise SubmissionError(f"architecture {ARCH}: config latent_dim = {dim!r}; expected an integer "
                              f"in [1, {MAX_LATENT_DIM}]")
    if not isinstance(space, str) or space not in OUTPUT_SPACES:
        raise SubmissionError(f"architecture {ARCH}: config space = {space!r}; expected one of "
                              f"{', '.join(OUTPUT_SPACES)}")
    if not isinstance(stem, str) or stem not in STEMS:
        raise SubmissionError(f"architecture {ARCH}: config stem = {stem!r}; expected one of "
                              f"{', '.join(STEMS)}")
    return Encoder(latent_dim=dim, space=space, stem=stem)
