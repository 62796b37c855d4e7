"""What a submitted file must look like before anything heavy starts: a regular file whose suffix
names a kind the evaluator reads and whose first bytes are that kind's. Pure Python (no torch, no
numpy), so ``ident3d evaluate`` reports a missing or mistyped file before it imports torch or starts
the sandbox; ``ident3d.submissions`` reads the file itself afterwards."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

from ident3d.errors import SubmissionError
from ident3d.readers import NotRegularFile, open_regular

KINDS = {".pt2": "exported-program", ".safetensors": "safetensors", ".npy": "embeddings"}
PICKLE_SUFFIXES = {".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".bin"}
WHAT = ("Fix: pass the path of your exported encoder (.pt2), weights (.safetensors) or embeddings "
        "(.npy).")
EXPORT_HELP = ("Fix: export the encoder with torch.export and a dynamic batch size, as in the README "
               "(`auto = torch.export.Dim.AUTO; torch.export.save(torch.export.export(model.eval(), "
               "(torch.rand(2, 3, 224, 224),), dynamic_shapes=({0: auto, 2: auto, 3: auto},)), "
               "'encoder.pt2')`: batch, height and width dynamic), or save its weights "
               "with safetensors and pass --arch, or submit embeddings as .npy.")


def _is_exported_program(path: Path) -> bool:
    """A zip archive holding a torch.export program (``torch.export.save`` writes models/*.json)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.endswith("models/model.json") for name in archive.namelist()[:4096])
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def submission_kind(path: Path) -> str:
    """The kind of the submitted file at ``path``, or one ``SubmissionError`` naming the file, what
    was expected and the fix. Reads at most the file's first bytes (and a zip's member list)."""
    path = Path(path)
    try:
        with open_regular(path) as f:
            head = f.read(16)
    except FileNotFoundError:
        raise SubmissionError(f"{path}: no such file. {WHAT}") from None
    except NotRegularFile as error:
        raise SubmissionError(f"{path}: not a regular file ({error}). {WHAT}") from None
    except OSError as error:
        raise SubmissionError(f"{path}: cannot be read ({error.strerror or error}). {WHAT}") from None
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        if _is_exported_program(path):
            raise SubmissionError(f"{path}: a torch.export program saved under the suffix {suffix}. Fix: "
                                  f"rename it to {path.with_suffix('.pt2').name}.")
        raise SubmissionError(f"{path}: pickle-based files are refused because loading them runs "
                              f"arbitrary code. {EXPORT_HELP}")
    if suffix not in KINDS:
        raise SubmissionError(f"{path}: unknown submission type {suffix!r}; expected .pt2, "
                              f".safetensors (with --arch) or .npy. {EXPORT_HELP}")
    kind = KINDS[suffix]
    if kind == "exported-program" and not head.startswith(b"PK\x03\x04"):
        raise SubmissionError(f"{path}: not a .pt2 archive (a zip file, which torch.export.save writes). "
                              f"{EXPORT_HELP}")
    if kind == "embeddings" and not head.startswith(b"\x93NUMPY"):
        raise SubmissionError(f"{path}: not a .npy file (numpy.save writes one). Fix: save the features "
                              "with numpy.save as an (N, d) float array, one row per test image.")
    if kind == "safetensors" and (len(head) < 9 or struct.unpack("<Q", head[:8])[0] < 2
                                  or head[8:9] != b"{"):
        raise SubmissionError(f"{path}: not a safetensors file (an 8-byte header length, then JSON). "
                              "Fix: save the weights with safetensors.torch.save_file.")
    return kind
