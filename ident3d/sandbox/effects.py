"""What a rebuilt program does to its own state, derived from the operator schemas, not a list of names.

Runs in the sandbox (``child``) when the first batch arrives and before the model sees an image. The
graph is run once on fake tensors (no data, no memory: torch's ``FakeTensorMode``) of the one batch
shape the sandbox ever runs, under a dispatch mode that sees every operator the graph
reaches after torch has expanded the composite ones (``dropout`` in eval mode returns its input
itself; ``einsum`` with one operand returns a view; ``batch_norm`` in training mode writes its
running statistics): each call's schema says which arguments it writes (``Tensor(a!)``), and a
written tensor whose storage is a parameter's, a buffer's or a constant's refuses the graph, as does
a returned tensor that shares one's storage. Aliases are followed by storage, so it does not matter
which operator made them.

Some schemas do not declare every write (``native_batch_norm``, which ``batch_norm`` becomes, updates
its running statistics unannotated), so the sandbox also holds a bitwise copy of the model's state
(``StateSnapshot``) and compares it after every batch: a write the schemas hid is caught the first
time it happens, before the features of that batch leave the sandbox.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class StateEffect(ValueError):
    """The program writes or returns its own state; the message names the tensor and the operator."""


def _storage(value: Any) -> StorageWeakRef | None:
    return StorageWeakRef(value.untyped_storage()) if isinstance(value, torch.Tensor) else None


class _Writes(TorchDispatchMode):
    """Raises at the first call that writes into the storage of a state tensor, or whose arguments
    (attention shapes, interpolation scales) its kernels would not check before reading memory."""

    def __init__(self, state: dict[StorageWeakRef, str]) -> None:
        super().__init__()
        self.state = state

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        given = dict(zip((a.name for a in func._schema.arguments), args, strict=False)) | kwargs
        problem = argument_problem(func, given)
        if problem:
            raise StateEffect(f"the graph calls {problem}, which its kernels do not check before they "
                              "read memory")
        for argument in func._schema.arguments:
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            for value in tree_leaves(given.get(argument.name)):
                owner = self.state.get(_storage(value)) if isinstance(value, torch.Tensor) else None
                if owner is not None:
                    raise StateEffect(f"the model changes its own parameter or buffer {owner!r} while "
                                      f"running ({func.name().removeprefix('aten::')} writes its "
                                      f"{argument.name!r}), so no two calls agree")
        return func(*args, **kwargs)


# Interpolation scales outside this range, or an output size far from input x scale, overflow or
# mislead the index arithmetic of the CPU kernels (a wild read with scales of 1e-20 on uint8).
SCALE_RANGE = (1 / 1024, 1024.0)
LARGEST_OUTPUT_SIDE = 1 << 16


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(value.shape) if isinstance(value, torch.Tensor) else ()


def _attention_problem(name: str, given: dict[str, Any]) -> str | None:
    """What about an attention call's query, key and value its kernels do not check in every rank:
    the key and value must hold one sequence (their rows), query and key one width, and the three one
    batch and head layout (no broadcasting, which the fused CPU kernel indexes past)."""
    q, k, v = (_shape(given.get(n)) for n in ("query", "key", "value"))
    if not (q and k and v):
        return None
    if not len(q) == len(k) == len(v) or len(q) < 3:
        return (f"{name} takes query, key and value of one rank (3 or more); given {list(q)}, {list(k)}, "
                f"{list(v)}")
    if k[-2] != v[-2]:
        return f"{name}: the key has {k[-2]} rows and the value {v[-2]}; they must be equal"
    if q[-1] != k[-1]:
        return f"{name}: the query's width {q[-1]} is not the key's {k[-1]}"
    if not q[:-2] == k[:-2] == v[:-2]:
        return (f"{name}: query, key and value must share their batch and head sizes (given {list(q[:-2])}, "
                f"{list(k[:-2])}, {list(v[:-2])}); broadcast them explicitly with expand before the call")
    mask = _shape(given.get("attn_mask"))
    if mask and (len(mask) > len(q) or mask[-2:] not in ((q[-2], k[-2]), (1, k[-2]), (q[-2], 1), (1, 1))):
        return f"{name}: a mask of shape {list(mask)} does not fit scores of shape {[*q[:-1], k[-2]]}"
    return None


def _interpolation_problem(name: str, given: dict[str, Any]) -> str | None:
    """Scales or output sizes of an upsampling call that overflow or mislead its index arithmetic."""
    image = _shape(given.get("input") if "input" in given else given.get("self"))
    sizes = list(given.get("output_size") or [])
    scales = [given[n] for n in given if n.startswith("scales")]
    scales += list(given.get("scale_factors") or [])
    for scale in (s for s in scales if s is not None):
        if not SCALE_RANGE[0] <= float(scale) <= SCALE_RANGE[1]:
            return f"{name}: a scale of {scale:g} is outside [{SCALE_RANGE[0]:g}, {SCALE_RANGE[1]:g}]"
    if any(not isinstance(n, int) or not 0 < n <= LARGEST_OUTPUT_SIDE for n in sizes):
        return f"{name}: an output size of {sizes} is outside 1 to {LARGEST_OUTPUT_SIDE}"
    given_scales = [s for s in scales if s is not None]
    spatial = image[-len(sizes):] if sizes and len(image) >= len(sizes) else ()
    if sizes and spatial and len(given_scales) == len(sizes):
        for size, side, scale in zip(sizes, spatial, given_scales, strict=True):
            if abs(size - side * float(scale)) > 1 + 1e-6 * size:
                return (f"{name}: an output size {size} from a side of {side} at scale {scale:g} (their "
                        "product); the kernel would index past its input")
    return None


def argument_problem(func: Any, given: dict[str, Any]) -> str | None:
    """Why the kernels of a call with arguments ``given`` (by schema name) would read past their
    inputs unchecked, or None: the rules the pre-run check applies before any kernel runs."""
    name = func.name().removeprefix("aten::")
    if "scaled_dot_product" in name:
        return _attention_problem(name, given)
    if "upsample" in name:
        return _interpolation_problem(name, given)
    return None


def _check_input_size(images: torch.fx.Node, shape: tuple[int, ...]) -> None:
    """torch's own input guard, before the reference kernels run: a dimension the program fixed at
    export that the batch does not have, in the guard's words (``host.fixed_size`` names the fix)."""
    sizes = getattr(images.meta.get("val"), "shape", ())
    for dim, (exported, given) in enumerate(zip(sizes, shape, strict=False)):
        if isinstance(exported, int) and exported != given:
            raise StateEffect(f"Expected input at *args[0].shape[{dim}] to be equal to {exported}, "
                              f"but got {given}")


def check_state_effects(program: torch.export.ExportedProgram, shape: tuple[int, ...]) -> None:
    """Raise ``StateEffect`` when running ``program`` on a batch of ``shape`` (the one shape the
    sandbox runs it at, ``child.FixedShape``) would write into, or return, memory of its own
    parameters, buffers or constants, through any alias, or when torch's reference kernels refuse
    its shapes (attention with a key shorter than its value, say, which CPU's fused kernel would
    read past)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    graph = program.graph_module
    signature = program.graph_signature
    owners = {**signature.inputs_to_parameters, **signature.inputs_to_buffers,
              **signature.inputs_to_lifted_tensor_constants}
    real = {**program.state_dict, **program.constants}
    fake = FakeTensorMode()
    values, state = [], {}
    for node in (n for n in graph.graph.nodes if n.op == "placeholder"):
        owner = owners.get(node.name)
        if owner is None:
            _check_input_size(node, shape)
        value = fake.from_tensor(real[owner] if owner is not None else torch.empty(shape))
        values.append(value)
        if owner is not None:
            state[_storage(value)] = owner
    try:
        with fake, _Writes(state):
            output = torch.fx.Interpreter(graph).run(*values)
    except StateEffect:
        raise
    except RuntimeError as error:
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise StateEffect(f"torch's reference kernels refuse the graph at the batch shape {list(shape)}: "
                          f"{first}") from None
    for value in tree_leaves(output):
        owner = state.get(_storage(value)) if isinstance(value, torch.Tensor) else None
        if owner is not None:
            raise StateEffect(f"the model returns its own parameter or buffer {owner!r} (or a view of it), "
                              "which the caller could change; return a new tensor")


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes (NaN equals itself bit for bit, unlike in ``torch.equal``)."""
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


class StateSnapshot:
    """A bitwise copy of a module's parameters and buffers, compared with them by ``check()``."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self.copies = {name: _bits(t).clone() for name, t in self._state()}

    def _state(self) -> list[tuple[str, torch.Tensor]]:
        return [*self.module.named_parameters(), *self.module.named_buffers()]

    def check(self) -> None:
        for name, tensor in self._state():
            if not torch.equal(_bits(tensor), self.copies[name]):
                raise StateEffect(f"the model changed its own parameter or buffer {name!r} while running, "
                                  "so no two calls agree")

