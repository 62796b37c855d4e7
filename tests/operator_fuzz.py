"""Call every operator of the sandbox's allow-list with crafted arguments (run as a script by
tests/test_operator_fuzz.py, in a process of its own so that a crash is seen, not suffered).

Arguments come from each overload's schema: tensors of 0 to 4 dimensions with sizes 0 to 5, some
transposed or sliced with a step (non-contiguous strides), integer tensors holding indices far
outside their range, integers and lists of integers that are negative, zero or large. Each call
first goes through the pre-run check's argument rules (``ident3d.sandbox.effects.argument_problem``:
attention shapes, interpolation scales and sizes), which refuse it before any kernel runs, or it
runs twice, the second time on copies of its inputs placed elsewhere on a heap freshly filled with
NaN: a kernel that reads outside its inputs gives a result that depends on that memory. Each
call's outcome is a result equal both times, a refusal (an exception), or a finding, printed as
one JSON line per overload; a process that dies names the overload it died in (printed first).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import torch

sys.path.insert(0, sys.argv[1])
from ident3d.sandbox.effects import argument_problem  # noqa: E402
from ident3d.sandbox.loading import overload_refusal  # noqa: E402
from ident3d.sandbox.operators import ATEN, TRAINING_ARGUMENTS  # noqa: E402

TRIALS = int(sys.argv[3]) if len(sys.argv) > 3 else 12
INTS = (-3, -1, 0, 1, 2, 3, 5, 1 << 16)


def tensor(rng: torch.Generator, index_like: bool) -> torch.Tensor:
    ndim = int(torch.randint(0, 5, (1,), generator=rng))
    shape = [int(torch.randint(0, 6, (1,), generator=rng)) for _ in range(ndim)]
    if index_like:
        return torch.randint(-50, 50, shape, generator=rng)
    t = torch.randn([s * 2 for s in shape], generator=rng)
    if ndim and bool(torch.randint(0, 2, (1,), generator=rng)):
        t = t[(slice(None, None, 2),) * ndim]  # every other element: strides of 2
    else:
        t = t[tuple(slice(0, s) for s in shape)]
    if ndim >= 2 and bool(torch.randint(0, 2, (1,), generator=rng)):
        t = t.transpose(0, -1)
    return t


ENUMS = {  # the reader admits these only as their own argument kinds (never a crafted integer)
    "ScalarType": (torch.float32, torch.float64, torch.float16, torch.int64, torch.bool),
    "Layout": (torch.strided,),
    "MemoryFormat": (torch.contiguous_format, torch.channels_last, torch.preserve_format),
    "Device": (torch.device("cpu"),),
}


def value(kind: str, name: str, rng: torch.Generator):
    """A crafted value of schema type ``kind``; None where this fuzzer has nothing to say."""
    pick = int(torch.randint(0, len(INTS), (1,), generator=rng))
    if kind in ENUMS:
        return ENUMS[kind][pick % len(ENUMS[kind])]
    if name == "pin_memory":
        return False  # pinning asks the CUDA driver; no program can reach it (docs/submissions.md)
    index_like = any(word in name for word in ("index", "indices", "repeats"))
    if kind.startswith("Optional["):
        return None if bool(torch.randint(0, 3, (1,), generator=rng) == 0) else value(kind[9:-1], name, rng)
    if kind == "Tensor":
        return tensor(rng, index_like)
    if kind in ("List[Tensor]", "List[Optional[Tensor]]"):
        return [tensor(rng, index_like) for _ in range(int(torch.randint(0, 4, (1,), generator=rng)))]
    if kind in ("int", "SymInt"):
        return INTS[pick]
    if kind in ("List[int]", "List[SymInt]"):
        return [INTS[int(torch.randint(0, len(INTS) - 1, (1,), generator=rng))]
                for _ in range(int(torch.randint(0, 5, (1,), generator=rng)))]
    if kind in ("float", "number"):  # scales too: far below and above one overflow index arithmetic
        return (-1.5, 0.0, 0.5, 2.0, float("inf"), float("nan"), 1e-20, 1e20)[pick % 8]
    if kind == "bool":  # training mode is refused by the reader (operators.TRAINING_ARGUMENTS): random
        return False if name in TRAINING_ARGUMENTS else bool(pick % 2)
    if kind == "List[bool]":
        return [bool(pick % 2)] * 3
    return None


def arguments(schema, rng: torch.Generator):
    args, kwargs = [], {}
    for argument in schema.arguments:
        kind = str(argument.real_type)
        crafted = value(kind, argument.name, rng)
        if crafted is None and argument.has_default_value():
            continue
        if crafted is None and kind.startswith("Optional["):
            crafted = None
        elif crafted is None:
            return None  # a type this fuzzer does not craft (str, Dimname, ScalarType, ...)
        if argument.kwarg_only:
            kwargs[argument.name] = crafted
        else:
            args.append(crafted)
    return args, kwargs


def copies(item):
    if isinstance(item, torch.Tensor):
        return item.clone()
    if isinstance(item, list):
        return [copies(i) for i in item]
    return item


def flat(result) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in flat(item)]
    return []


def malformed(result) -> bool:
    """A result with a negative size (``expand`` of a 0-d tensor to [-3, 0] makes one): harmless
    while it holds no element, since nothing is read; any element would be a finding."""
    return any(min(t.shape, default=0) < 0 for t in flat(result))


def same(a, b) -> bool:
    left, right = flat(a), flat(b)
    return len(left) == len(right) and all(
        x.shape == y.shape and x.dtype == y.dtype and (
            torch.equal(x, y) if not x.is_floating_point() else
            torch.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True))
        for x, y in zip(left, right, strict=True))


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a huge size is refused, not swapped
    torch.set_num_threads(1)
    rng = torch.Generator().manual_seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    for name in sorted(ATEN):
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if overload_refusal(op) is not None:
                continue  # the sandbox refuses it before it runs (tests/test_sandbox.py)
            print(json.dumps({"start": f"{name}.{overload}"}), flush=True)
            began = time.perf_counter()
            counts = {"same": 0, "refused": 0, "checked": 0, "skipped": 0, "malformed_empty": 0,
                      "differs": []}
            for trial in range(TRIALS):
                crafted = arguments(op._schema, rng)
                if crafted is None:
                    counts["skipped"] += 1
                    continue
                args, kwargs = crafted
                given = dict(zip((a.name for a in op._schema.arguments), args, strict=False)) | kwargs
                if argument_problem(op, given) is not None:
                    counts["checked"] += 1  # the sandbox's pre-run check refuses it before any kernel
                    continue
                try:
                    first = op(*copies(args), **copies(kwargs))
                except Exception:  # noqa: BLE001 - a refusal is the answer we want for bad input
                    counts["refused"] += 1
                    continue
                if malformed(first):
                    if any(t.numel() for t in flat(first)):
                        counts["differs"].append(trial)
                    else:
                        counts["malformed_empty"] += 1
                    continue
                torch.full((1 << 18,), float("nan")).sum()  # a heap full of NaN, freed again
                again = op(*copies(args), **copies(kwargs))
                if same(first, again):
                    counts["same"] += 1
                else:
                    counts["differs"].append(trial)
            print(json.dumps({"done": f"{name}.{overload}", "seconds": round(time.perf_counter() - began, 2),
                              **counts}), flush=True)


if __name__ == "__main__":
    main()
