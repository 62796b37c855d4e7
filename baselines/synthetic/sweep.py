"""Run a plan of the synthetic experiments: rows x seeds at a budget, resumable, shared by processes.

A plan is a TOML file of ``[[sweep]]`` tables (``name``, ``rows``, ``seeds``, ``budget``); the
measured table of this project is ``plan.toml`` beside this module. Any number of processes may run
the same plan into the same folder: each run is claimed by an exclusive lock file holding the
claimer's pid, a finished run (its result file exists) is skipped, and a run whose claimer died is
taken over and resumes from its checkpoint.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from ident3d.baselines.synthetic.run import Budget, result_name, run
from ident3d.baselines.synthetic.table import get_row
from ident3d.errors import TrainingError
from ident3d.readers import read_regular

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sweep:
    name: str
    rows: tuple[str, ...]
    seeds: tuple[int, ...]
    budget: Budget


PLAN = "baselines/synthetic/plan.toml"
MAX_PLAN_BYTES = 1 << 20


def load_plan(path: Path | None = None) -> list[Sweep]:
    """The sweeps of a plan file (default: the package's own plan), every field checked."""
    if path is None:
        return parse_plan(files("ident3d.baselines.synthetic").joinpath("plan.toml").read_text(), PLAN)
    try:
        text = read_regular(Path(path), MAX_PLAN_BYTES).decode()
    except (OSError, ValueError) as exc:  # ValueError: too large or not UTF-8
        raise TrainingError(f"{path}: not a readable plan ({exc}). Fix: pass a TOML file laid out "
                            f"like {PLAN}.") from None
    return parse_plan(text, str(path))


def parse_plan(text: str, source: str) -> list[Sweep]:
    """The sweeps of a plan's text; every row id and budget value is checked before anything runs."""
    try:
        entries = tomllib.loads(text).get("sweep", [])
    except tomllib.TOMLDecodeError as exc:
        raise TrainingError(f"{source}: not TOML ({exc}). Fix: lay it out like {PLAN}.") from None
    sweeps = []
    for entry in entries:
        name, rows, seeds = entry.get("name"), entry.get("rows"), entry.get("seeds")
        where = f"{source}: sweep {name!r}"
        if not (isinstance(name, str) and isinstance(rows, list) and rows
                and all(isinstance(r, str) for r in rows) and isinstance(seeds, list) and seeds
                and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
            raise TrainingError(f"{where}: needs a name, a list of row ids and a list of seeds >= 0. "
                                f"Fix: lay it out like {PLAN}.")
        for row_id in rows:
            get_row(row_id)
        sweeps.append(Sweep(name, tuple(rows), tuple(seeds), Budget.parse(entry.get("budget", {}), where)))
    if not sweeps:
        raise TrainingError(f"{source}: no [[sweep]] table. Fix: lay it out like {PLAN}.")
    return sweeps


def _owner() -> str:
    """This process as a lock records it: pid and the machine's boot id (a pid recurs after a reboot)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{os.getpid()} {boot}"


def _held(text: str) -> bool:
    """Whether the owner recorded in a lock is a live process of this boot."""
    pid, _, boot = text.strip().partition(" ")
    if not pid.isdigit() or boot != _owner().partition(" ")[2]:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def claim(lock: Path) -> Iterator[bool]:
    """Yield True if this process now owns ``lock`` (taking over one whose owner died), else False.
    Something at ``lock`` that is not a lock file (a folder, a FIFO, a large file) is left alone."""
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                text = read_regular(lock, 256).decode("ascii")
            except (OSError, ValueError):
                log.warning("%s is not a lock file this command wrote; its run is skipped", lock)
                yield False
                return
            if _held(text):
                yield False
                return
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(descriptor, "w") as handle:
            handle.write(_owner())
        try:
            yield True
        finally:
            lock.unlink(missing_ok=True)
        return
    yield False


def sweep(sweeps: list[Sweep], out: Path, only: str | None = None, progress: bool = True) -> list[Path]:
    """Run every (row, seed) of the chosen sweeps not yet finished or claimed; return the results."""
    chosen = [s for s in sweeps if only is None or s.name == only]
    if not chosen:
        raise TrainingError(f"no sweep named {only!r}; the plan has {', '.join(s.name for s in sweeps)}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for s in chosen:
        for row_id in s.rows:
            row = get_row(row_id)
            for seed in s.seeds:
                path = out / result_name(row, seed, s.budget)
                if path.exists():
                    continue
                with claim(out / f".{path.stem}.lock") as owned:
                    if owned:
                        written.append(run(row, seed, s.budget, out, progress=progress))
                    else:
                        log.info("%s is being run by another process; skipped", path.name)
    return written
