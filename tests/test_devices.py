"""One device resolver for evaluation and training (ident3d.devices)."""

import pytest
import torch

from ident3d.devices import resolve_device
from ident3d.errors import DeviceError


def test_auto_and_none_pick_cuda_only_when_torch_sees_it():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device(None).type == expected and resolve_device("auto").type == expected
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_missing_gpu_or_an_unknown_device_is_named_with_the_fix():
    with pytest.raises(DeviceError, match="torch sees no CUDA GPU. Fix: run on a GPU machine"):
        resolve_device("cuda:0")
    with pytest.raises(DeviceError, match="only cpu and cuda are supported"):
        resolve_device("meta")
    with pytest.raises(DeviceError, match="'toaster' is not a torch device"):
        resolve_device("toaster")


def test_every_training_verb_takes_cuda_n_as_the_docs_say():
    from ident3d.baselines.config import TrainConfig
    from ident3d.cli import build_parser
    from ident3d.errors import TrainingError

    parser = build_parser()
    assert parser.parse_args(["train", "--preset", "normal-box", "--data", "d", "--out", "o",
                              "--device", "cuda:1"]).device == "cuda:1"
    assert parser.parse_args(["synthetic", "run", "--row", "T2.1", "--out", "o", "--device", "cuda:0"]
                             ).device == "cuda:0"
    assert TrainConfig(device="cuda:1").device == "cuda:1"
    with pytest.raises(TrainingError, match="expected auto, cpu, cuda or cuda:N"):
        TrainConfig(device="cuda:one")
