"""The checks of a ``.pt2`` archive's program (its JSON graph) before anything is rebuilt from it:
every name an identifier path, every operator on the allow-list (``ident3d.sandbox.operators``),
every argument of a known kind, every size expression parsed anew (``ident3d.sandbox.shapes``), one
tensor in and one out, no state mutated, guard code dropped unread. ``pt2_reader`` checks the archive's
members and tensors and calls ``check_program`` on the model's JSON."""

from __future__ import annotations

import json
import keyword
import re
from typing import Any

from ident3d.sandbox import operators
from ident3d.sandbox.shapes import ShapeExpressionError, canonical_expression, is_symbol_name

STRIDED = 7
NAME_KEYS = {"name", "parameter_name", "buffer_name", "tensor_constant_name", "custom_obj_name",
             "arg_name"}
ARGUMENT_KINDS = {"as_none", "as_tensor", "as_tensors", "as_int", "as_ints", "as_float", "as_floats",
                  "as_string", "as_sym_int", "as_sym_ints", "as_scalar_type", "as_memory_format",
                  "as_layout", "as_device", "as_bool", "as_bools", "as_sym_bool", "as_sym_bools",
                  "as_optional_tensors", "as_sym_float", "as_sym_floats", "as_optional_tensor"}
INPUT_KINDS = {"parameter", "buffer", "tensor_constant", "user_input"}
# The pytree specs torch 2.x writes for forward(x) -> tensor
IN_SPEC = [1, {"type": "builtins.tuple", "context": "null", "children_spec": [
    {"type": "builtins.tuple", "context": "null", "children_spec": [
        {"type": None, "context": None, "children_spec": []}]},
    {"type": "builtins.dict", "context": "[]", "children_spec": []}]}]
OUT_SPEC = [1, {"type": None, "context": None, "children_spec": []}]
VERSION = re.compile(r"[0-9A-Za-z.+_-]{1,64}")


class ArchiveRefused(ValueError):
    """The archive breaks a rule of the reader; the message says which, in our words, and ``fix``
    the fix when it is not the general one (export the plain model again)."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


def is_identifier_path(text: object) -> bool:
    """``layer1.0.conv1.weight``: identifiers and indices joined by dots, no dunder, no keyword."""
    if not isinstance(text, str) or not 0 < len(text) <= 256:
        return False
    for part in text.split("."):
        if part.isdigit() and len(part) <= 6:
            continue
        if (not part.isascii() or not part.isidentifier() or keyword.iskeyword(part)
                or part.startswith("__")):
            return False
    return True


def _check_names(node: Any, where: str) -> None:
    """Every value under a name key, and every key of a value table, is an identifier path."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in NAME_KEYS and not is_identifier_path(value):
                raise ArchiveRefused(f"name {str(value)[:60]!r} at {where}/{key} is not a plain "
                                     "identifier")
            if key in ("tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values"):
                bad = [k for k in value if not is_identifier_path(k)] if isinstance(value, dict) else [key]
                if bad:
                    raise ArchiveRefused(f"name {str(bad[0])[:60]!r} in {where}/{key} is not a plain "
                                         "identifier")
            _check_names(value, f"{where}/{key}")
    elif isinstance(node, list):
        for item in node:
            _check_names(item, where)


def _canonical_shapes(node: Any, where: str) -> None:
    """Replace every ``expr_str`` by its canonical print; refuse what the grammar does not accept."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "expr_str":
                try:
                    node[key] = canonical_expression(value)
                except ShapeExpressionError as error:
                    raise ArchiveRefused(f"shape expression {str(value)[:60]!r} at {where} is refused: "
                                         f"{error}") from None
            else:
                _canonical_shapes(value, f"{where}/{key}")
    elif isinstance(node, list):
        for item in node:
            _canonical_shapes(item, where)


def _check_arguments(node: Any, where: str) -> None:
    for item in node.get("inputs", []):
        arg = item.get("arg") if isinstance(item, dict) else None
        kinds = set(arg) if isinstance(arg, dict) else {"(missing)"}
        if not kinds <= ARGUMENT_KINDS:
            raise ArchiveRefused(f"node {where} passes a {sorted(kinds - ARGUMENT_KINDS)[0]} argument "
                                 "(subgraphs, custom objects and operators are refused)")
        if arg.get("as_layout", STRIDED) != STRIDED:
            raise ArchiveRefused(f"node {where} asks for a sparse layout")


def _check_nodes(graph: dict[str, Any]) -> None:
    nodes = graph.get("nodes")
    if not isinstance(nodes, list):
        raise ArchiveRefused("the graph has no node list")
    kept = []
    for index, node in enumerate(nodes):
        target = node.get("target") if isinstance(node, dict) else None
        if not isinstance(target, str):
            raise ArchiveRefused(f"node {index} has no operator")
        name = operators.aten_name(target)
        if name in operators.STRIPPED:
            continue
        where = f"{index} ({target[:60]})"
        training = [i["arg"].get("as_bool") if isinstance(i.get("arg"), dict) else None
                    for i in node.get("inputs", []) if isinstance(i, dict)
                    and i.get("name") in operators.TRAINING_ARGUMENTS]
        if any(flag is not False for flag in training):
            raise ArchiveRefused(f"node {where} runs in training mode (random, or batch statistics written "
                                 "into its buffers); export the model after model.eval()")
        if name not in operators.ATEN and target not in operators.SYMBOLIC:
            private = (", a private backend kernel (written by run_decompositions(); export without it)"
                       if (name or "").startswith("_") else "")
            raise ArchiveRefused(f"the graph calls {target[:80]!r}{private}, which is not on the list of "
                                 "pure tensor operators (docs/submissions.md)")
        _check_arguments(node, where)
        node["metadata"] = {}
        kept.append(node)
    graph["nodes"] = kept
    if graph.get("custom_obj_values"):
        raise ArchiveRefused("the graph holds custom objects")


def _check_signature(gm: dict[str, Any]) -> None:
    signature = gm.get("signature") or {}
    inputs = signature.get("input_specs", [])
    kinds = [next(iter(spec)) if isinstance(spec, dict) and len(spec) == 1 else "?" for spec in inputs]
    unknown = sorted(set(kinds) - INPUT_KINDS)
    if unknown:
        raise ArchiveRefused(f"the program takes a {unknown[0]} input; only parameters, buffers, "
                             "tensor constants and one image tensor are accepted")
    users = [spec["user_input"] for spec, kind in zip(inputs, kinds, strict=True) if kind == "user_input"]
    outputs = signature.get("output_specs", [])
    if len(users) != 1 or "as_tensor" not in (users[0].get("arg") or {}):
        raise ArchiveRefused(f"the program takes {len(users)} inputs; expected one image tensor")
    kinds_out = [next(iter(spec)) if isinstance(spec, dict) and len(spec) == 1 else "?" for spec in outputs]
    if kinds_out.count("user_output") > 1:
        raise ArchiveRefused(f"the program returns {kinds_out.count('user_output')} values (a tuple or a "
                             "dict?) where the evaluator takes one tensor of features (B, d)",
                             fix="Fix: return the features alone from forward and export again.")
    if kinds_out != ["user_output"] or "as_tensor" not in (outputs[0]["user_output"].get("arg") or {}):
        raise ArchiveRefused("the program must return one tensor and change no buffer (exported in "
                             "training mode? call model.eval() before torch.export.export)")
    graph = gm["graph"]
    if len(graph.get("inputs", [])) != len(inputs) or len(graph.get("outputs", [])) != 1:
        raise ArchiveRefused("the graph's inputs and outputs do not match its signature")
    root = [entry for entry in gm.get("module_call_graph", []) if isinstance(entry, dict)
            and entry.get("fqn") == ""]
    spec = root[0].get("signature") if root else None
    if not isinstance(spec, dict):
        raise ArchiveRefused("the program has no calling convention (module_call_graph)")
    try:
        specs = json.loads(spec.get("in_spec", "")), json.loads(spec.get("out_spec", ""))
    except (ValueError, TypeError, RecursionError):
        specs = None
    if specs != (IN_SPEC, OUT_SPEC):
        raise ArchiveRefused("the program's calling convention is not forward(images) -> tensor")
    arg_names = spec.get("forward_arg_names") or ["x"]
    if len(arg_names) != 1 or not is_identifier_path(arg_names[0]):
        raise ArchiveRefused("the program's argument name is not a plain identifier")
    gm["module_call_graph"] = [{"fqn": "", "signature": {
        "inputs": [], "outputs": [], "in_spec": json.dumps(IN_SPEC), "out_spec": json.dumps(OUT_SPEC),
        "forward_arg_names": arg_names}}]


def _tensor_names(arg: dict[str, Any]) -> list[str]:
    """The tensor names an argument or output refers to (one, a list, or optional ones)."""
    if "as_tensor" in arg:
        return [arg["as_tensor"].get("name")]
    found = []
    for item in arg.get("as_tensors") or arg.get("as_optional_tensors") or []:
        inner = item.get("as_tensor", item) if isinstance(item, dict) else {}
        found.append(inner.get("name") if isinstance(inner, dict) else None)
    return found


def _schema(target: str) -> Any:
    """The schema of an allow-listed ``torch.ops.aten.NAME.OVERLOAD``, or a refusal."""
    import torch

    name, _, overload = target[len(operators.PREFIX):].partition(".")
    packet = getattr(torch.ops.aten, name)
    if overload not in packet.overloads():
        raise ArchiveRefused(f"the graph calls {target[:80]!r}, an overload that does not exist")
    return getattr(packet, overload)._schema


def _check_state_untouched(gm: dict[str, Any]) -> None:
    """No operator writes into a parameter, buffer or constant, directly or through any alias of it,
    and none is returned (the model would change between calls, so no two scores agree). What each
    operator writes (``Tensor(a!)``) and which inputs each output shares memory with (``Tensor(a)``)
    is read from its schema's alias annotations; composite operators, whose schema does not show what
    they become, are followed in the sandbox (``ident3d.sandbox.effects``)."""
    origin: dict[str, str] = {}  # tensor name -> the state tensor it shares memory with
    for spec in gm["signature"].get("input_specs", []):
        for kind in ("parameter", "buffer", "tensor_constant"):
            if kind in spec:
                name = (spec[kind].get("arg") or {}).get("name")
                origin[name] = spec[kind].get(f"{kind}_name", name)
    for node in gm["graph"]["nodes"]:
        if operators.aten_name(node["target"]) is None:
            continue  # size arithmetic: no tensors
        schema = _schema(node["target"])
        given = {item.get("name"): _tensor_names(item.get("arg") or {}) for item in node.get("inputs") or []
                 if isinstance(item, dict)}
        outputs = [_tensor_names(output) for output in node.get("outputs") or []]
        written: list[str] = []
        shares: list[list[str]] = [[] for _ in outputs]
        for argument in schema.arguments:
            info = argument.alias_info
            if info is None:
                continue
            if info.is_write:
                written += given.get(argument.name, [])
            for i, returned in enumerate(schema.returns[:len(outputs)]):
                if returned.alias_info is not None and returned.alias_info.before_set & info.before_set:
                    shares[i] += given.get(argument.name, [])
        hit = next((t for t in written if t in origin), None)
        if hit is not None:
            through = "" if origin[hit] == hit else f" through {hit!r}, a view of it"
            raise ArchiveRefused(f"the model changes its own parameter or buffer {origin[hit]!r} while "
                                 f"running ({node['target'][len(operators.PREFIX):]}{through}), so no two "
                                 "calls agree")
        for names, sources in zip(outputs, shares, strict=True):
            shared = next((origin[t] for t in sources if t in origin), None)
            if shared is not None:
                origin.update(dict.fromkeys(names, shared))
    returned = [t for output in gm["graph"].get("outputs", []) for t in _tensor_names(output)]
    hit = next((t for t in returned if t in origin), None)
    if hit is not None:
        raise ArchiveRefused(f"the model returns its own parameter or buffer {origin[hit]!r} (or a view of "
                             "it), which the caller could change; return a new tensor")


def check_program(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict) or not isinstance(document.get("graph_module"), dict):
        raise ArchiveRefused("the model member is not an exported program")
    if not isinstance(document.get("guards_code", []), list):
        raise ArchiveRefused("guards_code is not a list")
    if not VERSION.fullmatch(str(document.get("torch_version", "0"))):
        raise ArchiveRefused("torch_version is not a version string")
    ranges = document.get("range_constraints") or {}
    for symbol, bounds in ranges.items() if isinstance(ranges, dict) else [(None, None)]:
        if not is_symbol_name(symbol) or not isinstance(bounds, dict) or not all(
                bounds.get(k) is None or type(bounds.get(k)) is int for k in ("min_val", "max_val")):
            raise ArchiveRefused(f"range constraint {str(symbol)[:40]!r} is not a size symbol with "
                                 "integer bounds")
    gm = document["graph_module"]
    if not isinstance(gm.get("graph"), dict):
        raise ArchiveRefused("the program has no graph")
    if gm.get("treespec_namedtuple_fields"):
        raise ArchiveRefused("the program returns named tuples; return one tensor")
    gm["metadata"] = {}
    _check_names(gm, "graph_module")
    _check_nodes(gm["graph"])
    _check_signature(gm)
    _check_state_untouched(gm)
    _canonical_shapes(document, "")
    document["guards_code"] = []  # Python source torch would compile and run: dropped, never read
    return document
