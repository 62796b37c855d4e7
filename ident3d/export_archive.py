"""Read a ``torch.export`` archive (``.pt2``) as data: nothing in it is unpickled or evaluated.

``torch.export.load`` is not safe for untrusted files (torch 2.14, docs/submissions.md):

* it always unpickles the bundled sample inputs and, when the restricted unpickler refuses them,
  retries with the full one, so a crafted sample-input member runs code and the model still loads;
* weights and constants saved as pickles (tensor subclasses), custom and opaque objects and
  AOTInductor members (compiled shared libraries) are unpickled or executed;
* symbolic shapes are parsed with ``sympy.sympify``, which evaluates Python expressions, and node
  targets are resolved by attribute lookup on ``torch``, so ``torch.save`` can become an operator.

So the archive is checked member by member before torch sees it: only raw tensor bytes, JSON and
a sample-input pickle that is scanned (never loaded) are accepted; every shape expression must be
plain symbolic arithmetic; every operator must be an ATen or prims op or plain arithmetic; node
metadata is dropped. The graph is then deserialised from the checked JSON with every unpickler
disabled, and the resulting graph is checked once more.
"""

from __future__ import annotations

import contextlib
import io
import json
import operator
import pickle
import pickletools
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from ident3d.errors import SubmissionError

MAX_RATIO = 20  # torch stores members uncompressed; a larger ratio is a zip bomb
MAX_BYTES = 16 << 30
META_FILES = {"archive_format", "archive_version", "byteorder", ".data/version",
              ".data/serialization_id", ".data/version_", ".format_version", ".storage_alignment"}
# What the bundled sample inputs may reference: tensors, storages and containers, nothing callable.
SAFE_PICKLE_GLOBALS = {("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_parameter"),
                       ("torch._utils", "_rebuild_tensor"), ("collections", "OrderedDict"),
                       ("torch", "Size"), ("torch", "device")}
SAFE_STORAGE = re.compile(r"^(Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool|ComplexFloat|"
                          r"ComplexDouble|Untyped)Storage$")
UNSAFE_OPCODES = {"STACK_GLOBAL", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2", "EXT4", "BUILD",
                  "PERSID"}
# Shape expressions: sympy constructors, symbol names, numbers and arithmetic. Nothing else can be
# named, so sympify can only build expressions (it calls eval on its input).
SYMPY_NAMES = {"Symbol", "Integer", "Rational", "Float", "Add", "Mul", "Pow", "Max", "Min", "Abs",
               "FloorDiv", "CeilDiv", "CleanDiv", "Mod", "PythonMod", "IntTrueDiv", "FloatTrueDiv",
               "TruncToInt", "TruncToFloat", "RoundToInt", "ToFloat", "Identity", "CeilToInt",
               "FloorToInt", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "And", "Or", "Not", "oo", "zoo", "nan",
               "True", "False", "positive", "negative", "integer", "real", "nonnegative", "nonpositive",
               "finite", "infinite", "zero", "nonzero", "even", "odd", "LShift", "RShift",
               "BitwiseFn_bitwise_and", "BitwiseFn_bitwise_or", "OpaqueUnaryFn_sqrt", "int_oo",
               "IntInfinity", "NegativeIntInfinity"}
SYMBOL_NAME = re.compile(r"^[a-z]{1,6}\d+$")
EXPR_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
                        r"|(?P<string>'[^'\\]*')|(?P<op>\*\*|//|[-+*/%(),=<>!]))")
SAFE_OPERATOR_TARGETS = {f"_operator.{name}" for name in (
    "getitem", "add", "sub", "mul", "floordiv", "truediv", "mod", "neg", "pow", "eq", "ne", "lt", "le",
    "gt", "ge", "and_", "or_", "not_")} | {f"torch.{name}" for name in (
        "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_ite", "_sym_sqrt")} | {
    f"math.{name}" for name in ("ceil", "floor", "trunc", "sqrt")}
SAFE_OP_NAMESPACES = ("torch.ops.aten.", "torch.ops.prims.")
SAFE_CALLABLES = {operator.getitem, operator.add, operator.sub, operator.mul, operator.floordiv,
                  operator.truediv, operator.mod, operator.neg, operator.pow, operator.eq, operator.ne,
                  operator.lt, operator.le, operator.gt, operator.ge, operator.and_, operator.or_,
                  operator.not_}


def _refuse(path: Path, what: str) -> SubmissionError:
    return SubmissionError(
        f"{path}: {what}. ident3d reads .pt2 files as data and refuses anything that could run "
        "code. Fix: export the plain model again with torch.export.save (docs/submissions.md), "
        "or submit safetensors weights with --arch.")


def _members(path: Path, archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by name relative to its one root folder."""
    infos = archive.infolist()
    if not infos:
        raise _refuse(path, "the archive is empty")
    roots = {info.filename.split("/", 1)[0] for info in infos}
    if len(roots) != 1:
        raise _refuse(path, f"expected one root folder, found {len(roots)}")
    total = sum(info.file_size for info in infos)
    packed = max(1, sum(info.compress_size for info in infos))
    if total > MAX_BYTES or total > MAX_RATIO * packed + (1 << 20):
        raise _refuse(path, f"members unpack to {total} bytes from {packed} (a zip bomb?)")
    root = roots.pop()
    out = {}
    for info in infos:
        name = info.filename[len(root) + 1:]
        if info.is_dir():
            continue
        if ".." in name.split("/") or name.startswith("/"):
            raise _refuse(path, f"member {info.filename!r} has an unsafe path")
        out[name] = info
    return out


def _classify(path: Path, names: list[str]) -> str:
    """Check every member name; return the one model's name."""
    models = [n[len("models/"):-len(".json")] for n in names
              if n.startswith("models/") and n.endswith(".json")]
    if len(models) != 1:
        raise _refuse(path, f"expected exactly one model under models/, found {len(models)}")
    model = models[0]
    allowed = {f"models/{model}.json", f"data/weights/{model}_weights_config.json",
               f"data/constants/{model}_constants_config.json", f"data/sample_inputs/{model}.pt"}
    for name in names:
        if name in allowed or name in META_FILES or name.startswith("extra/"):
            continue
        if re.fullmatch(r"data/weights/weight_\d+", name) or re.fullmatch(r"data/constants/tensor_\d+",
                                                                          name):
            continue
        kind = ("compiled code (AOTInductor)" if name.startswith("data/aotinductor/") else
                "a pickled object" if name.endswith((".pt", ".pkl")) or "obj_" in name else
                "an unexpected member")
        raise _refuse(path, f"member {name!r} is {kind}")
    for required in (f"data/weights/{model}_weights_config.json",
                     f"data/constants/{model}_constants_config.json"):
        if required not in names:
            raise _refuse(path, f"member {required!r} is missing (not a torch.export archive)")
    return model


def _payload_config(path: Path, name: str, raw: bytes, prefix: str) -> dict[str, Any]:
    try:
        config = json.loads(raw)["config"]
    except (ValueError, KeyError, TypeError) as error:
        raise _refuse(path, f"member {name!r} is not a payload config ({error})") from None
    for fqn, meta in config.items():
        if not isinstance(meta, dict):
            raise _refuse(path, f"member {name!r}: entry {fqn!r} is not an object")
        if meta.get("use_pickle"):
            raise _refuse(path, f"member {name!r}: {fqn!r} is stored as a pickle")
        if not str(meta.get("path_name", "")).startswith(prefix) or meta.get("tensor_meta") is None:
            raise _refuse(path, f"member {name!r}: {fqn!r} is not a raw tensor "
                                f"({meta.get('path_name')!r})")
    return config


def scan_pickle(data: bytes) -> list[str]:
    """Names a pickle would import or opcodes it would use beyond rebuilding tensors (no execution)."""
    problems = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name == "GLOBAL":
                module, _, name = str(arg).partition(" ")
                safe = (module, name) in SAFE_PICKLE_GLOBALS or (module == "torch"
                                                                 and SAFE_STORAGE.match(name))
                if not safe:
                    problems.append(f"imports {module}.{name}")
            elif opcode.name in UNSAFE_OPCODES:
                problems.append(f"uses opcode {opcode.name}")
    except Exception as error:  # pickletools raises ValueError and others on garbage
        problems.append(f"is not a readable pickle ({error})")
    return problems


def _check_sample_inputs(path: Path, name: str, data: bytes) -> None:
    """The sample inputs are never loaded; a crafted one is refused so the submitter hears of it."""
    try:
        inner = zipfile.ZipFile(io.BytesIO(data))
        pickles = [m for m in inner.namelist() if m.endswith(".pkl")]
        blobs = [inner.read(m) for m in pickles]
    except (zipfile.BadZipFile, OSError, KeyError, EOFError):
        blobs, pickles = [data], [name]
    for member, blob in zip(pickles, blobs, strict=True):
        problems = scan_pickle(blob)
        if problems:
            raise _refuse(path, f"member {name!r} ({member}) is a pickle that {problems[0]}")


def check_expression(text: str) -> bool:
    """True when ``text`` is plain symbolic arithmetic that sympify may parse."""
    if not isinstance(text, str) or len(text) > 4096:
        return False
    pos = 0
    while pos < len(text):
        match = EXPR_TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            return text[pos:].strip() == ""
        name, string = match.group("name"), match.group("string")
        if name is not None and name not in SYMPY_NAMES and not SYMBOL_NAME.match(name):
            return False
        if string is not None and not SYMBOL_NAME.match(string.strip("'")):
            return False
        pos = match.end()
    return True


def _check_program(path: Path, document: Any) -> None:
    """Every shape expression is arithmetic, every target a safe operator; metadata is dropped."""
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "expr_str" and not check_expression(value):
                    raise _refuse(path, f"shape expression {str(value)[:80]!r} at {where} is not "
                                        "plain arithmetic")
                if key == "target" and isinstance(value, str) and where.endswith("/nodes"):
                    if not (value.startswith(SAFE_OP_NAMESPACES) or value in SAFE_OPERATOR_TARGETS):
                        raise _refuse(path, f"the graph calls {value!r}, which is not an ATen or "
                                            "prims operator")
                walk(value, f"{where}/{key}")
            if "metadata" in node and where.endswith("/nodes"):
                node["metadata"] = {}
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    walk(document, "")
    ranges = document.get("range_constraints") or {}
    for key in ranges:
        if not check_expression(key):
            raise _refuse(path, f"range constraint {key[:80]!r} is not a symbol name")


@contextlib.contextmanager
def no_unpickling() -> Iterator[None]:
    """Make every unpickler in reach raise while torch deserialises a checked archive."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise SubmissionError("the archive asked to unpickle an object; refused")

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


def _check_graph(path: Path, program: torch.export.ExportedProgram) -> None:
    for node in program.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        target = node.target
        safe = (node.op == "call_function"
                and (isinstance(target, torch._ops.OpOverload)
                     and target.namespace in ("aten", "prims")
                     or target in SAFE_CALLABLES
                     or getattr(target, "__module__", None) in ("math",)
                     or getattr(target, "__name__", "").startswith("sym_")))
        if not safe:
            raise _refuse(path, f"graph node {node.name!r} calls {target!r} ({node.op})")


def load_exported_program(path: Path) -> torch.export.ExportedProgram:
    """A checked archive as an ExportedProgram; raises SubmissionError naming the culprit member."""
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass
    from torch.export.pt2_archive._package import PT2ArchiveReader, _load_constants, _load_state_dict

    path = Path(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise _refuse(path, f"not a .pt2 (zip) archive ({error})") from None
    with archive:
        members = _members(path, archive)
        model = _classify(path, sorted(members))

        def read(name: str) -> bytes:
            try:
                return archive.read(members[name])
            except (zipfile.BadZipFile, OSError, EOFError) as error:
                raise _refuse(path, f"member {name!r} cannot be read ({error})") from None

        if "archive_format" not in members or read("archive_format").strip() != b"pt2":
            raise _refuse(path, "member 'archive_format' does not say pt2")
        if "byteorder" in members and read("byteorder").strip() != b"little":
            raise _refuse(path, "member 'byteorder' is not 'little'")
        for name, prefix in ((f"data/weights/{model}_weights_config.json", "weight_"),
                             (f"data/constants/{model}_constants_config.json", "tensor_")):
            _payload_config(path, name, read(name), prefix)
        sample = f"data/sample_inputs/{model}.pt"
        if sample in members:
            _check_sample_inputs(path, sample, read(sample))
        try:
            document = json.loads(read(f"models/{model}.json"), parse_constant=_no_constant)
        except (ValueError, RecursionError) as error:
            raise _refuse(path, f"member 'models/{model}.json' is not JSON ({error})") from None
        if not isinstance(document, dict):
            raise _refuse(path, f"member 'models/{model}.json' is not a JSON object")
        _check_program(path, document)
    try:
        with no_unpickling():
            reader = PT2ArchiveReader(str(path))
            state_dict = _load_state_dict(reader, model)
            constants = _load_constants(reader, model)
            serialized = _dict_to_dataclass(schema.ExportedProgram, document)
            program = ExportedProgramDeserializer().deserialize(serialized, state_dict, constants, b"")
    except SubmissionError as error:
        raise _refuse(path, str(error)) from None
    except Exception as error:  # torch raises many types for a malformed graph
        raise _refuse(path, f"torch cannot rebuild the program ({type(error).__name__}: "
                            f"{str(error).splitlines()[0] if str(error) else ''})") from None
    _check_graph(path, program)
    return program


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")

