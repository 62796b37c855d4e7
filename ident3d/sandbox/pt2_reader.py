"""Read a submitted ``torch.export`` archive (``.pt2``) as data, then rebuild it from checked data only.

``torch.export.load`` is not built for hostile files (torch 2.14, docs/submissions.md): it unpickles
sample inputs and pickled weights, builds views of weights from raw strides without bounds checks,
hands symbolic sizes to ``sympy.sympify`` (Python's ``eval``), executes "guard" source code stored in
the archive, and pastes parameter and input names into Python source that it generates and runs.
So ``read_archive`` (pure Python, no torch) checks every byte torch would act on, and ``rebuild``
hands torch only what passed, never the archive:

* members: one root folder, unique names, stored (not compressed), no encryption, each listed as a
  raw tensor or JSON; sample inputs and anything pickled are never read;
* tensors: a strided dtype from a fixed list, sizes and strides whose extent fits inside the member
  (a zero-byte member claiming elements is refused), a cap per tensor and on the parameter count;
* names: every name (parameters, buffers, constants, inputs, outputs, nodes, symbols) is a plain
  identifier path;
* operators: each node calls an operator of ``ident3d.sandbox.operators``; torch's own checks are
  removed; dropout only with ``train=False``; no subgraphs, custom objects or operator arguments;
* sizes: every symbolic expression is parsed by ``ident3d.sandbox.shapes`` and printed anew;
* calling convention: one tensor in, one tensor out, no buffer mutation; guard code (Python
  source torch would run to check input sizes) is dropped unread.
"""

from __future__ import annotations

import io
import json
import keyword
import math
import pickletools
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ident3d.readers import parse_json
from ident3d.sandbox import operators
from ident3d.sandbox.limits import Limits
from ident3d.sandbox.shapes import ShapeExpressionError, canonical_expression, is_symbol_name

META_FILES = {"archive_format", "archive_version", "byteorder", ".data/version",
              ".data/serialization_id", ".data/version_", ".format_version", ".storage_alignment"}
# ScalarType of torch._export.serde.schema -> (torch dtype name, bytes per element)
DTYPES = {1: ("uint8", 1), 2: ("int8", 1), 3: ("int16", 2), 4: ("int32", 4), 5: ("int64", 8),
          6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 12: ("bool", 1), 13: ("bfloat16", 2)}
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
# The bundled sample inputs are never loaded; a pickle in them that could do more than rebuild
# tensors is refused all the same, so its author hears of it.
SAMPLE_PICKLE_GLOBALS = {("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_parameter"),
                         ("torch._utils", "_rebuild_tensor"), ("collections", "OrderedDict"),
                         ("torch", "Size"), ("torch", "device")}
SAMPLE_STORAGE = re.compile(r"(Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)Storage")
SAMPLE_PICKLE_BYTES = 16 << 20
UNSAFE_OPCODES = {"STACK_GLOBAL", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2", "EXT4", "BUILD",
                  "PERSID"}


class ArchiveRefused(ValueError):
    """The archive breaks a rule of the reader; the message says which, in our words."""


@dataclass
class TensorRecord:
    member: str
    dtype: str
    sizes: list[int]
    strides: list[int]
    offset: int
    is_param: bool


@dataclass
class CheckedArchive:
    model: str
    document: dict[str, Any]
    weights: dict[str, TensorRecord] = field(default_factory=dict)
    constants: dict[str, TensorRecord] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    parameters: int = 0


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


def _members(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    infos = archive.infolist()
    if not infos:
        raise ArchiveRefused("the archive is empty")
    names = [info.filename for info in infos]
    duplicates = sorted(n for n, count in Counter(names).items() if count > 1)
    if duplicates:
        raise ArchiveRefused(f"member {duplicates[0]!r} appears more than once (which copy is read "
                             "depends on the reader)")
    roots = {n.split("/", 1)[0] for n in names}
    if len(roots) != 1:
        raise ArchiveRefused(f"expected one root folder, found {len(roots)}")
    root = roots.pop()
    out = {}
    for info in infos:
        if info.is_dir():
            continue
        name = info.filename[len(root) + 1:]
        if info.flag_bits & 0x1:
            raise ArchiveRefused(f"member {name!r} is encrypted")
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise ArchiveRefused(f"member {name!r} is compressed (method {info.compress_type}); "
                                 "torch.export.save stores members uncompressed")
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*", name) or ".." in name.split("/"):
            raise ArchiveRefused(f"member name {info.filename[:80]!r} is not a plain relative path")
        out[name] = info
    return out


def _model_name(names: list[str]) -> str:
    models = [n[len("models/"):-len(".json")] for n in names if n.startswith("models/")
              and n.endswith(".json")]
    if len(models) != 1 or not is_identifier_path(models[0]):
        raise ArchiveRefused(f"expected exactly one model under models/, found {len(models)}")
    model = models[0]
    allowed = {f"models/{model}.json", f"data/weights/{model}_weights_config.json",
               f"data/constants/{model}_constants_config.json", f"data/sample_inputs/{model}.pt"}
    for name in names:
        if (name in allowed or name in META_FILES or name.startswith("extra/")
                or re.fullmatch(r"data/weights/weight_\d{1,6}|data/constants/tensor_\d{1,6}", name)):
            continue
        kind = ("compiled code (AOTInductor)" if name.startswith("data/aotinductor/") else
                "a pickled object" if name.endswith((".pt", ".pkl")) or "obj_" in name else
                "an unexpected member")
        raise ArchiveRefused(f"member {name!r} is {kind}")
    return model


def pickle_problems(data: bytes) -> list[str]:
    """What a pickle would import or do beyond rebuilding tensors, found without running it."""
    problems = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name == "GLOBAL":
                module, _, name = str(arg).partition(" ")
                if (module, name) not in SAMPLE_PICKLE_GLOBALS and not (
                        module == "torch" and SAMPLE_STORAGE.fullmatch(name)):
                    problems.append(f"imports {module[:40]}.{name[:40]}")
            elif opcode.name in UNSAFE_OPCODES:
                problems.append(f"uses opcode {opcode.name}")
    except Exception as error:  # noqa: BLE001 - pickletools raises many types on garbage
        problems.append(f"is not a readable pickle ({type(error).__name__})")
    return problems


def _check_sample_inputs(name: str, data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            pickles = [i for i in inner.infolist() if i.filename.endswith(".pkl")]
            too_large = any(i.file_size > SAMPLE_PICKLE_BYTES for i in pickles)
            blobs = {} if too_large else {i.filename: inner.read(i) for i in pickles}
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError):
        too_large, blobs = False, {name: data}
    if too_large:
        raise ArchiveRefused(f"member {name!r} holds a pickle larger than {SAMPLE_PICKLE_BYTES} bytes "
                             "once unpacked")
    for member, blob in blobs.items():
        problems = pickle_problems(blob)
        if problems:
            raise ArchiveRefused(f"member {name!r} ({member[:60]}) is a pickle that {problems[0]}")


def _json(raw: bytes, what: str) -> Any:
    try:
        return parse_json(raw)
    except (ValueError, RecursionError, UnicodeDecodeError) as error:
        raise ArchiveRefused(f"member {what!r} is not JSON ({str(error)[:80]})") from None


def _ints(values: Any, what: str, low: int = 0) -> list[int]:
    if not isinstance(values, list) or len(values) > 8:
        raise ArchiveRefused(f"{what}: expected a list of at most 8 sizes")
    out = []
    for value in values:
        number = value.get("as_int") if isinstance(value, dict) else None
        if not isinstance(number, int) or isinstance(number, bool) or not low <= number < 2**40:
            raise ArchiveRefused(f"{what}: {str(value)[:60]} is not a concrete size")
        out.append(number)
    return out


def _tensor_records(config: Any, what: str, prefix: str, members: dict[str, zipfile.ZipInfo],
                    folder: str, limits: Limits) -> dict[str, TensorRecord]:
    entries = config.get("config") if isinstance(config, dict) else None
    if not isinstance(entries, dict):
        raise ArchiveRefused(f"member {what!r} has no 'config' object")
    records = {}
    for fqn, meta in entries.items():
        where = f"member {what!r}, entry {str(fqn)[:60]!r}"
        if not is_identifier_path(fqn):
            raise ArchiveRefused(f"{where}: the name is not a plain identifier path")
        if not isinstance(meta, dict) or meta.get("use_pickle") is not False:
            raise ArchiveRefused(f"{where}: stored as a pickle, not as raw tensor bytes")
        path, tensor = meta.get("path_name"), meta.get("tensor_meta")
        if not isinstance(path, str) or not re.fullmatch(rf"{prefix}\d{{1,6}}", path):
            raise ArchiveRefused(f"{where}: {str(path)[:40]!r} is not a raw tensor member")
        member = f"{folder}/{path}"
        if member not in members:
            raise ArchiveRefused(f"{where}: member {member!r} is missing")
        if not isinstance(tensor, dict) or tensor.get("dtype") not in DTYPES:
            raise ArchiveRefused(f"{where}: dtype {tensor.get('dtype') if isinstance(tensor, dict) else None}"
                                 f" is not one of the plain numeric types")
        if tensor.get("layout") != STRIDED:
            raise ArchiveRefused(f"{where}: layout {tensor.get('layout')} is not strided (sparse tensors "
                                 "are refused)")
        sizes = _ints(tensor.get("sizes"), where)
        strides = _ints(tensor.get("strides"), where)
        offset = _ints([tensor.get("storage_offset")], where)[0]
        if len(strides) != len(sizes):
            raise ArchiveRefused(f"{where}: {len(sizes)} sizes but {len(strides)} strides")
        dtype, itemsize = DTYPES[tensor["dtype"]]
        nbytes = members[member].file_size
        span = sum((s - 1) * t for s, t in zip(sizes, strides, strict=True))
        extent = 0 if math.prod(sizes) == 0 else offset + span + 1
        if extent * itemsize > nbytes or nbytes % itemsize:
            raise ArchiveRefused(f"{where}: shape {sizes} with strides {strides} needs "
                                 f"{extent * itemsize} bytes, member {member!r} holds {nbytes}")
        if nbytes > limits.max_tensor_bytes:
            raise ArchiveRefused(f"{where}: {nbytes} bytes is above the cap of {limits.max_tensor_bytes}")
        records[fqn] = TensorRecord(member, dtype, sizes, strides, offset, meta.get("is_param") is True)
    return records


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
        if name in operators.DROPOUT:
            train = [i["arg"].get("as_bool") for i in node.get("inputs", []) if i.get("name") == "train"]
            if train != [False]:
                raise ArchiveRefused(f"node {where} is dropout in training mode (random); export the "
                                     "model after model.eval()")
        elif name not in operators.ATEN and target not in operators.SYMBOLIC:
            raise ArchiveRefused(f"the graph calls {target[:80]!r}, which is not on the list of pure "
                                 "tensor operators (docs/submissions.md)")
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
    if [next(iter(spec)) for spec in outputs] != ["user_output"] or "as_tensor" not in (
            outputs[0]["user_output"].get("arg") or {}):
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


def _check_state_untouched(gm: dict[str, Any]) -> None:
    """No in-place operator writes into a parameter, buffer or constant (the model would change
    between calls); writes through views of them are caught by the reproducibility probe."""
    state = set()
    for spec in gm["signature"].get("input_specs", []):
        for kind in ("parameter", "buffer", "tensor_constant"):
            if kind in spec:
                state.add((spec[kind].get("arg") or {}).get("name"))
    for node in gm["graph"]["nodes"]:
        name = operators.aten_name(node["target"]) or ""
        if not (name.endswith("_") or name == "copy"):
            continue
        first = (node.get("inputs") or [{}])[0].get("arg", {}).get("as_tensor", {}).get("name")
        if first in state:
            raise ArchiveRefused(f"the model changes its own parameter or buffer {first!r} while running "
                                 f"({node['target'][len(operators.PREFIX):]}), so no two calls agree")


def _check_program(document: Any) -> dict[str, Any]:
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


def read_archive(data: bytes, limits: Limits | None = None) -> CheckedArchive:
    """Check an archive's bytes; raises ArchiveRefused naming the first rule it breaks."""
    try:
        return _read_archive(data, limits or Limits())
    except (AttributeError, TypeError, KeyError, IndexError, RecursionError) as error:
        # JSON of the wrong shape somewhere the checks expected an object, list or number
        raise ArchiveRefused(f"the archive's JSON does not have the structure of a torch.export program "
                             f"({type(error).__name__})") from None


def _read_archive(data: bytes, limits: Limits) -> CheckedArchive:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise ArchiveRefused(f"not a .pt2 (zip) archive ({error})") from None
    with archive:
        members = _members(archive)
        model = _model_name(sorted(members))
        root = archive.infolist()[0].filename.split("/", 1)[0]

        def read(name: str) -> bytes:
            try:
                raw = archive.read(f"{root}/{name}")
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
                raise ArchiveRefused(f"member {name!r} cannot be read ({error})") from None
            if len(raw) != members[name].file_size:
                raise ArchiveRefused(f"member {name!r} is not the size its header states")
            return raw

        if "archive_format" not in members or read("archive_format").strip() != b"pt2":
            raise ArchiveRefused("member 'archive_format' does not say pt2")
        if "byteorder" in members and read("byteorder").strip() != b"little":
            raise ArchiveRefused("member 'byteorder' is not 'little'")
        sample = f"data/sample_inputs/{model}.pt"
        if sample in members:
            _check_sample_inputs(sample, read(sample))
        checked = CheckedArchive(model, {})
        for name, prefix, folder, target in (
                (f"data/weights/{model}_weights_config.json", "weight_", "data/weights", "weights"),
                (f"data/constants/{model}_constants_config.json", "tensor_", "data/constants", "constants")):
            if name not in members:
                raise ArchiveRefused(f"member {name!r} is missing (not a torch.export archive)")
            records = _tensor_records(_json(read(name), name), name, prefix, members, folder, limits)
            setattr(checked, target, records)
        for record in [*checked.weights.values(), *checked.constants.values()]:
            if record.member not in checked.blobs:
                checked.blobs[record.member] = read(record.member)
        checked.parameters = sum(math.prod(r.sizes) for r in checked.weights.values())
        if checked.parameters > limits.max_parameters:
            raise ArchiveRefused(f"{checked.parameters} parameters is above the cap of "
                                 f"{limits.max_parameters} (ident3d evaluate --max-parameters)")
        checked.document = _check_program(_json(read(f"models/{model}.json"), f"models/{model}.json"))
    return checked
