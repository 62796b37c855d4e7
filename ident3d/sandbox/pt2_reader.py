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

This module reads the archive (members, tensors, pickles never loaded); ``pt2_graph`` checks the
program's JSON (names, operators, arguments, sizes, calling convention).
"""

from __future__ import annotations

import io
import math
import pickletools
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ident3d.readers import parse_json
from ident3d.sandbox.limits import Limits
from ident3d.sandbox.pt2_graph import STRIDED, ArchiveRefused, check_program, is_identifier_path

META_FILES = {"archive_format", "archive_version", "byteorder", ".data/version",
              ".data/serialization_id", ".data/version_", ".format_version", ".storage_alignment"}
# ScalarType of torch._export.serde.schema -> (torch dtype name, bytes per element)
DTYPES = {1: ("uint8", 1), 2: ("int8", 1), 3: ("int16", 2), 4: ("int32", 4), 5: ("int64", 8),
          6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 12: ("bool", 1), 13: ("bfloat16", 2)}
# The bundled sample inputs are never loaded; a pickle in them that could do more than rebuild
# tensors is refused all the same, so its author hears of it.
SAMPLE_PICKLE_GLOBALS = {("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_parameter"),
                         ("torch._utils", "_rebuild_tensor"), ("collections", "OrderedDict"),
                         ("torch", "Size"), ("torch", "device")}
SAMPLE_STORAGE = re.compile(r"(Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)Storage")
SAMPLE_PICKLE_BYTES = 16 << 20
UNSAFE_OPCODES = {"STACK_GLOBAL", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2", "EXT4", "BUILD",
                  "PERSID"}


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
        checked.document = check_program(_json(read(f"models/{model}.json"), f"models/{model}.json"))
    return checked
