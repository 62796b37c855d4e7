"""The budget of a synthetic run: steps, batch, learning rates, Lambda's map and the numeric
precision; how a plan or a result file spells it and how a file name and a report name it. Reading it
needs no model code, so the reports that only read results import nothing heavier."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ident3d.errors import TrainingError

# fp32: float32 throughout (TF32 off); tf32: CUDA matmuls round their inputs to TF32's 10-bit mantissa;
# bf16: the encoder and the loss under bfloat16 autocast (matmuls in bfloat16, reductions in float32)
PRECISIONS = ("fp32", "tf32", "bf16")
ADDED_LATER = {"precision"}  # budget fields a result written before them lacks (their default applies)


@dataclass(frozen=True)
class Budget:
    steps: int = 10_000
    batch_size: int = 256
    lr: float = 1e-4  # main_mlp.py --lr
    loss_lr: float = 1e-3  # Lambda's (AnInfoNCE code: --lr-lambda 1e-3)
    precision_map: str = "exp"
    eval_every: int = 500
    precision: str = "fp32"  # of the encoder's forward and the loss: PRECISIONS (docs/synthetic.md)

    @classmethod
    def parse(cls, values: object, where: str, complete: bool = False) -> Budget:
        """A budget from a plan's table (any subset of the fields) or a result file (all of them)."""
        names = [f.name for f in fields(cls)]
        if (not isinstance(values, dict) or set(values) - set(names)
                or (complete and set(names) - set(values) - ADDED_LATER)):
            raise TrainingError(f"{where}: budget must be a table of {', '.join(names)}")
        for key, value in values.items():
            kind = type(getattr(cls, key))
            allowed = (int, float) if kind is float else (kind,)
            if isinstance(value, bool) or not isinstance(value, allowed) or (kind is not str and value <= 0):
                raise TrainingError(f"{where}: budget {key} = {value!r}; expected a positive {kind.__name__}")
        from ident3d.baselines.losses import PRECISION_MAPS  # torch: only a plan or result being read

        if values.get("precision_map", cls.precision_map) not in PRECISION_MAPS:
            raise TrainingError(f"{where}: budget precision_map = {values['precision_map']!r}; expected "
                                f"one of {', '.join(PRECISION_MAPS)}")
        if values.get("precision", cls.precision) not in PRECISIONS:
            raise TrainingError(f"{where}: budget precision = {values['precision']!r}; expected one of "
                                f"{', '.join(PRECISIONS)}")
        return cls(**values)

    def record(self) -> dict[str, Any]:
        """The budget as a result file holds it: a field added later is left out at its default, so a
        result says what results before it said for the same run."""
        return {k: v for k, v in asdict(self).items() if k not in ADDED_LATER or v != getattr(Budget, k)}

    def _beyond_defaults(self) -> list[tuple[str, str]]:
        """(file-name part, readable part) for each setting of Lambda that differs from the default."""
        extra = []
        if self.loss_lr != Budget.loss_lr:
            extra.append((f"-llr{self.loss_lr:g}", f", Lambda lr {self.loss_lr:g}"))
        if self.precision_map != Budget.precision_map:
            extra.append((f"-{self.precision_map}", f", {self.precision_map} Lambda"))
        if self.precision != Budget.precision:
            extra.append((f"-{self.precision}", f", {self.precision}"))
        return extra

    def tag(self) -> str:
        """What tells results apart in a file name: batch, steps, learning rates, Lambda's map."""
        parts = (t for t, _ in self._beyond_defaults())
        return f"b{self.batch_size}-n{self.steps}-lr{self.lr:g}" + "".join(parts)

    def label(self) -> str:
        """The same, for people: ``256 x 10,000, lr 0.001`` (and what else differs from the defaults)."""
        parts = (r for _, r in self._beyond_defaults())
        return f"{self.batch_size:,} x {self.steps:,}, lr {self.lr:g}" + "".join(parts)
