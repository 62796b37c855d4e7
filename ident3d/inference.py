"""Run an encoder over many images: channels-last on CPU, optionally compiled.

What the evaluator may do is bounded by its tolerance: the metrics of a fixed model must not move
by more than 1e-4. Measured on 2 CPU cores (``python -m benchmarks.evaluator``; docs/facts.md,
"Evaluation speed"): an exported ResNet18 at 224 px runs at 80 % of this machine's float32 matrix
multiply peak already, so float32 has little left to win. Channels-last leaves every metric
unchanged and is the default. ``torch.compile`` with frozen weights is 1.37x faster but moves the
Spearman MCC of unrecovered latents (correlations near 0, where a tiny change flips the matching)
by up to 5e-4, and bfloat16 is 2.1x faster but moves metrics by up to 1e-2: neither is used by
the evaluator; ``compile=True`` is there for quick looks at one's own model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch


class Runner:
    """``runner(x)``: the model's output for a float32 (B, 3, H, W) batch on ``device``.

    When compiled, every call sees the same batch size (a short last batch is padded by repeating
    its last image and the padding is dropped), so the model is compiled once.
    """

    def __init__(self, model: Any, device: torch.device, batch_size: int, compile: bool = False):
        try:
            model.eval()
        except (NotImplementedError, RuntimeError):
            pass  # exported programs keep the mode they were exported in
        self.eager = model
        self.device = device
        self.batch_size = batch_size
        self.channels_last = device.type == "cpu" and isinstance(model, torch.nn.Module)
        if isinstance(model, torch.nn.Module):
            model.to(device)
            if self.channels_last:
                model.to(memory_format=torch.channels_last)
        self.compiled: Callable | None = None
        if compile and isinstance(model, torch.nn.Module):
            self.compiled = torch.compile(model, dynamic=False, options={"freezing": True})

    def __call__(self, x: torch.Tensor) -> Any:
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        if self.compiled is None:
            return self.eager(x)
        n = len(x)
        if n < self.batch_size:
            x = torch.cat([x, x[-1:].expand(self.batch_size - n, *x.shape[1:])])
        try:
            out = self.compiled(x)
        except Exception as error:  # noqa: BLE001 - any compiler failure falls back to eager
            warnings.warn(f"torch.compile failed ({type(error).__name__}: {str(error)[:200]}); "
                          "running the model eagerly (same results, slower).", stacklevel=2)
            self.compiled = None
            return self.eager(x[:n])
        return out[:n] if isinstance(out, torch.Tensor) else out
