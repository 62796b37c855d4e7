"""Build a submitted model inside the sandbox from bytes that passed the reader.

Runs in the child process (``ident3d.sandbox.child``). A ``.pt2`` is rebuilt from the checked
document and tensor bytes (never from the archive itself, so torch reads exactly what was checked),
with every unpickler made to raise; its graph is checked once more after torch has resolved the
operators. Safetensors weights are parsed by ``safetensors`` (no pickle) and loaded into an
architecture registered by an installed package.
"""

from __future__ import annotations

import contextlib
import math
import operator
import pickle
from collections.abc import Iterator
from typing import Any

import torch

from ident3d.readers import parse_json, safetensors_header
from ident3d.sandbox import operators
from ident3d.sandbox.pt2_reader import CheckedArchive, TensorRecord

SYMBOLIC_CALLABLES = {operator.getitem, operator.add, operator.sub, operator.mul, operator.floordiv,
                      operator.truediv, operator.mod, operator.neg, operator.eq, operator.ne,
                      operator.lt, operator.le, operator.gt, operator.ge, operator.and_, operator.or_,
                      operator.not_}


class LoadRefused(ValueError):
    """The model cannot be built from the submitted bytes; the message is ours."""


@contextlib.contextmanager
def no_unpickling() -> Iterator[None]:
    """Every unpickler in reach raises while torch rebuilds a checked program."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise LoadRefused("the program asked to unpickle an object")

    class RefusingUnpickler(pickle.Unpickler):  # a class, so modules may still subclass it
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            refuse()

    replacements = {(pickle, "load"): refuse, (pickle, "loads"): refuse,
                    (pickle, "Unpickler"): RefusingUnpickler, (torch, "load"): refuse,
                    (torch.serialization, "load"): refuse, (torch._C, "_pickle_load_obj"): refuse}
    saved = [(obj, name, getattr(obj, name)) for obj, name in replacements]
    try:
        for (obj, name), value in replacements.items():
            setattr(obj, name, value)
        yield
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)


def _tensors(records: dict[str, TensorRecord], blobs: dict[str, bytes]) -> dict[str, torch.Tensor]:
    """Strided views of each member's bytes; the reader has checked that every view fits."""
    flat: dict[str, torch.Tensor] = {}
    out: dict[str, torch.Tensor] = {}
    for fqn, record in records.items():
        dtype = getattr(torch, record.dtype)
        if record.member not in flat:
            raw = blobs[record.member]
            flat[record.member] = (torch.frombuffer(bytearray(raw), dtype=dtype) if raw
                                   else torch.zeros(0, dtype=dtype))
        base = flat[record.member]
        if base.dtype != dtype:
            raise LoadRefused(f"member {record.member!r} is read as two dtypes")
        tensor = torch.as_strided(base, record.sizes, record.strides, record.offset)
        out[fqn] = torch.nn.Parameter(tensor, requires_grad=False) if record.is_param else tensor
    return out


ENUM_TYPES = {"ScalarType": torch.dtype, "Layout": torch.layout, "MemoryFormat": torch.memory_format,
              "Device": torch.device}


def overload_refusal(op: torch._ops.OpOverload) -> str | None:
    """Why an overload of an allow-listed operator is refused, or None: one that neither takes nor
    returns a tensor (the scalar arithmetic of TorchScript, such as ``remainder.int``, whose kernels
    trust their inputs: ``remainder.int(1, 0)`` kills the process; a shape query such as
    ``sym_size.int`` takes a tensor and stays), one that writes into an ``out=`` tensor, or one that
    takes a torch type as a bare number."""
    schema = op._schema
    if not any("Tensor" in str(a.real_type) for a in (*schema.arguments, *schema.returns)):
        return "takes and returns no tensor (scalar arithmetic)"
    if any(a.is_out or a.name == "out" for a in schema.arguments):
        return "writes into an out= tensor"
    if any(a.name in ("dtype", "layout", "memory_format") and "int" in str(a.real_type)
           for a in schema.arguments):
        return "takes a torch type as a bare number (TorchScript's prim_ overloads)"
    return None


def _enum_mismatch(op: torch._ops.OpOverload, node: torch.fx.Node) -> str | None:
    """The first argument whose schema type is a dtype, layout, memory format or device but whose
    value is not one (a crafted integer there indexes torch's tables out of range)."""
    given = dict(zip((a.name for a in op._schema.arguments), node.args, strict=False)) | dict(node.kwargs)
    for argument in op._schema.arguments:
        kind = str(argument.real_type).removeprefix("Optional[").removesuffix("]")
        value = given.get(argument.name)
        if kind in ENUM_TYPES and value is not None and not isinstance(value, ENUM_TYPES[kind]):
            return argument.name
    return None


def _check_graph(program: torch.export.ExportedProgram) -> None:
    for node in program.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        target = node.target
        aten = (node.op == "call_function" and isinstance(target, torch._ops.OpOverload)
                and target.namespace == "aten"
                and target._opname in operators.ATEN)
        allowed = aten or node.op == "call_function" and (
            target in SYMBOLIC_CALLABLES
            or getattr(target, "__name__", "") in ("sym_int", "sym_float", "sym_max", "sym_min",
                                                   "sym_not", "sym_ite", "ceil", "floor", "trunc"))
        if not allowed:
            raise LoadRefused(f"graph node {node.name!r} calls {str(target)[:80]!r} ({node.op})")
        why = overload_refusal(target) if aten else None
        if why is not None:
            raise LoadRefused(f"graph node {node.name!r} calls {str(target)[:80]!r}, which {why}")
        wrong = _enum_mismatch(target, node) if aten else None
        if wrong is not None:
            raise LoadRefused(f"graph node {node.name!r} passes {str(target)[:80]!r} a {wrong!r} that is "
                              "not a torch type (a crafted number)")


def program_module(checked: CheckedArchive) -> tuple[torch.export.ExportedProgram, torch.nn.Module]:
    """The checked program and its ``nn.Module`` (torch's own rebuild, fed only checked data)."""
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass

    with no_unpickling():
        weights = _tensors(checked.weights, checked.blobs)
        constants = _tensors(checked.constants, checked.blobs)
        serialized = _dict_to_dataclass(schema.ExportedProgram, checked.document)
        program = ExportedProgramDeserializer().deserialize(serialized, weights, constants, None)
        _check_graph(program)
        return program, program.module(check_guards=False)


def safetensors_module(data: bytes, arch: str | None, max_parameters: int) -> torch.nn.Module:
    """Weights parsed by safetensors into a registered architecture (config from the metadata)."""
    from safetensors import safe_open  # noqa: F401 - imported before the lock-down
    from safetensors.torch import load

    from ident3d.architectures import build

    try:
        header = safetensors_header(data)
    except ValueError as error:
        raise LoadRefused(f"not a safetensors file ({error})") from None
    metadata = header.get("__metadata__") or {}
    arch = arch or metadata.get("arch")
    if not isinstance(arch, str) or not arch:
        raise LoadRefused("safetensors weights need --arch NAME (the file's metadata names none)")
    try:
        config = parse_json(metadata.get("config", "{}"))
    except (ValueError, RecursionError):
        raise LoadRefused("the metadata field 'config' is not a JSON object") from None
    if not isinstance(config, dict):
        raise LoadRefused("the metadata field 'config' is not a JSON object")
    shapes = [meta.get("shape") if isinstance(meta, dict) else None for key, meta in header.items()
              if key != "__metadata__"]
    if not all(isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape) for shape in shapes):
        raise LoadRefused("not a safetensors file (a tensor without a shape of sizes)")
    count = sum(math.prod(shape) for shape in shapes)
    if count > max_parameters:
        raise LoadRefused(f"{count} parameters is above the cap of {max_parameters}")
    tensors = load(data)
    model = build(arch, config)
    try:
        model.load_state_dict(tensors)
    except RuntimeError as error:
        first = " ".join(str(error).strip().splitlines()[0:2])
        raise LoadRefused(f"the weights do not fit architecture {arch!r}: {first[:300]}") from None
    return model
