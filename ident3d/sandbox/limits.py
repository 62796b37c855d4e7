"""What a submitted model may use. Plain data (no torch), so the command line can show the defaults."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Limits:
    """The reader's caps (``ident3d evaluate --max-parameters`` and ``--max-feature-dim``)."""

    max_parameters: int = 200_000_000
    max_tensor_bytes: int = 2 << 30
    max_feature_dim: int = 4096
    max_file_bytes: int = 4 << 30


@dataclass(frozen=True)
class SandboxLimits:
    """The sandbox's bounds; a maintainer raises them with the evaluate flags."""

    memory_gib: float = 6.0  # address space on top of the warmed-up process (--memory-limit)
    batch_seconds: float = 600.0  # wall time per batch (--time-limit)
    load_seconds: float = 300.0  # wall time to start, lock down and rebuild the model
    cpu_seconds: int = 24 * 3600  # CPU time of the whole run (a backstop to the wall limits)
    reader: Limits = field(default_factory=Limits)
