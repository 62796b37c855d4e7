"""Where a command may write: never over what it reads, never into a file that is not its own. The
command line checks its --out/--data with these, and so do drivers that call the library directly."""

from __future__ import annotations

import os
from pathlib import Path

from ident3d.errors import Ident3dError


class OutputError(Ident3dError):
    """An output path that cannot be written."""


def check_output_file(path: Path, flag: str, *, reads: tuple[Path | None, ...] = (),
                      overwrite: bool = False) -> Path:
    """Refuse an output file that is a folder, is one of the command's inputs (``reads``) or lies
    inside one, already exists (unless ``overwrite``), or sits in a folder that cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{flag} {path}: is a folder, expected a file name. "
                          f"Fix: pass a file path such as {path / 'result.json'}")
    check_not_an_input(path, flag, reads)
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise OutputError(f"{flag} {path}: already exists. Fix: pass --overwrite to replace it (the old "
                          "file stays until the new one is complete), or choose another path.")
    _check_writable(path.parent, path, flag)
    return path


def check_output_folder(path: Path, flag: str, *, reads: tuple[Path | None, ...] = ()) -> Path:
    """Refuse an output folder path that is a file, is or lies inside an input, or cannot be written."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{flag} {path}: is a file, expected a folder. "
                          "Fix: pass a folder path (it is created if missing).")
    check_not_an_input(path, flag, reads)
    _check_writable(path, path, flag)
    return path


def check_not_an_input(path: Path, flag: str, reads: tuple[Path | None, ...]) -> None:
    """A command never writes over what it reads: ``path`` must not be an input or lie inside one
    (symlinks resolved, so another spelling of the same file is caught too)."""
    out = Path(path).resolve()
    for given in filter(None, reads):
        source = Path(given).resolve()
        if out == source or source in out.parents:
            where = "is" if out == source else "lies inside"
            raise OutputError(f"{flag} {path}: {where} the input {given}, which this command reads; it "
                              "never writes over its inputs. Fix: choose an output outside it.")


def _check_writable(folder: Path, path: Path, flag: str) -> None:
    """The nearest existing ancestor of ``folder`` (itself included) must be a writable folder."""
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: {folder} is not a writable folder. "
                          "Fix: choose a location you can write to.")
