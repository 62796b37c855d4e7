"""Several seeds' models of one architecture trained as one: each seed keeps its own parameters, and
one call runs them all, so a run of S seeds costs one forward and one backward pass of S-wide
grouped matrix products instead of S passes of small ones (``python -m benchmarks.stacked_seeds``).

A stack is called on inputs with a leading seed dimension, (S, B, ...) -> (S, B, ...). Seed k's
slice of every stacked parameter is seed k's own model (``torch.func.stack_module_state``) and its
forward is ``torch.func.vmap`` over ``functional_call``: the same function of the same numbers,
computed by batched kernels, so its outputs equal the models' own to float32 rounding. Adam and the
other element-wise optimisers then update each seed's slice as they would its own model.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap


class SeedStack(nn.Module):
    """The models (at least two, one architecture) as one module of stacked parameters."""

    def __init__(self, models: Sequence[nn.Module]) -> None:
        super().__init__()
        if len(models) < 2:
            raise ValueError("a stack needs at least two models; call one model as it is")
        params, buffers = stack_module_state(list(models))
        trained = dict(models[0].named_parameters())
        self.names = list(params)
        self.stacked = nn.ParameterList(nn.Parameter(params[name].detach(), trained[name].requires_grad)
                                        for name in self.names)
        self.buffer_names = list(buffers)
        for i, name in enumerate(self.buffer_names):
            self.register_buffer(f"buffer_{i}", buffers[name])
        self._shape = (copy.deepcopy(models[0]).to("meta"),)  # the architecture, without weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        params = dict(zip(self.names, self.stacked, strict=True))
        buffers = {name: getattr(self, f"buffer_{i}") for i, name in enumerate(self.buffer_names)}
        shape = self._shape[0]
        return vmap(lambda p, b, xs: functional_call(shape, (p, b), (xs,)))(params, buffers, x)


def seed_models(models: Sequence[nn.Module]) -> tuple[nn.Module, Callable[[torch.Tensor], torch.Tensor]]:
    """The module to train and checkpoint, and its call on (S, B, ...) inputs: one seed's model as
    it is (its numbers and its checkpoint's names unchanged), several as a ``SeedStack``."""
    if len(models) == 1:
        model = models[0]
        return model, lambda x: model(x[0])[None]
    stack = SeedStack(models)
    return stack, stack
