"""Run a plan of the synthetic experiments: rows x seeds at a budget, resumable, shared by processes.

A plan is a TOML file of ``[[sweep]]`` tables (``name``, ``rows``, ``seeds``, ``budget``, the ``column``:
unsupervised, identity or supervised, and ``default = false`` for a sweep run only when named); the
measured table of this project is ``plan.toml`` beside this module. Each (row, seed) is a job of the
experiments' driver (``ident3d.baselines.driver``): any number of processes may run the same plan
into the same folder; a finished run (its result file exists) is skipped, and a run whose claimer
died is taken over and resumes from its checkpoint. ``sweep_on_devices`` starts one such process per
device (``ident3d synthetic sweep --devices all``: every visible GPU).
"""

from __future__ import annotations

import multiprocessing
import tomllib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from importlib.resources import files
from pathlib import Path

from ident3d.baselines.driver import Job, run_jobs
from ident3d.baselines.synthetic.budget import Budget
from ident3d.baselines.synthetic.run import result_name, run_seeds
from ident3d.baselines.synthetic.table import COLUMNS, get_row
from ident3d.errors import TrainingError
from ident3d.readers import read_regular


@dataclass(frozen=True)
class Sweep:
    name: str
    rows: tuple[str, ...]
    seeds: tuple[int, ...]
    budget: Budget
    column: str = "unsupervised"
    default: bool = True  # run by a plain ``sweep``; False: only when named (``--only``)


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
        column, default = entry.get("column", "unsupervised"), entry.get("default", True)
        if not isinstance(default, bool):
            raise TrainingError(f"{where}: default = {default!r}; expected true or false")
        if column not in COLUMNS:
            raise TrainingError(f"{where}: column = {column!r}; expected one of {', '.join(COLUMNS)}")
        sweeps.append(Sweep(name, tuple(rows), tuple(seeds), Budget.parse(entry.get("budget", {}), where),
                            column, default))
    if not sweeps:
        raise TrainingError(f"{source}: no [[sweep]] table. Fix: lay it out like {PLAN}.")
    return sweeps


def sweep(sweeps: list[Sweep], out: Path, only: str | None = None, progress: bool = True,
          device: str | None = None, stacked: bool = False) -> list[Path]:
    """Run every (row, seed) of the chosen sweeps not yet finished or claimed on ``device`` (None: CUDA
    when present); return the results. ``stacked``: each row's seeds are one job, trained as one
    stacked model (``run_seeds``), finished when its last seed's result exists."""
    chosen = [s for s in sweeps if s.name == only or (only is None and s.default)]
    if not chosen:
        raise TrainingError(f"no sweep named {only!r}; the plan has {', '.join(s.name for s in sweeps)}")
    jobs, results = [], {}
    for s in chosen:
        for row in map(get_row, s.rows):
            paths = {seed: out / result_name(row, seed, s.budget, s.column) for seed in s.seeds}
            unfinished = [seed for seed in s.seeds if not paths[seed].exists()] or list(s.seeds[-1:])
            for seeds in [unfinished] if stacked else [[seed] for seed in s.seeds]:
                done = paths[seeds[-1]]  # a stack writes its last seed's result last
                results[done] = [paths[seed] for seed in seeds]
                name = result_name(row, "-".join(map(str, seeds)), s.budget, s.column).removesuffix(".json")
                jobs.append(Job(name, done, partial(run_seeds, row, seeds, s.budget, out, progress=progress,
                                                    column=s.column, device=device)))
    return [path for done in run_jobs(jobs, out) for path in results[done]]


def sweep_on_devices(sweeps: list[Sweep], out: Path, devices: list[str], only: str | None = None,
                     progress: bool = True, stacked: bool = False) -> dict[str, list[Path]]:
    """The chosen sweeps spread over ``devices``, one process per device (``visible_devices``):
    each process claims the next run no other has claimed (the driver's locks), so N GPUs share a
    plan as N separate ``sweep`` commands would. Returns the results each device wrote."""
    context = multiprocessing.get_context("spawn")  # CUDA cannot be initialised in a forked child
    with ProcessPoolExecutor(max_workers=len(devices), mp_context=context) as pool:
        futures = [pool.submit(sweep, sweeps, out, only, progress and i == 0, device, stacked)
                   for i, device in enumerate(devices)]
        return {f"{device} #{i}": future.result() for i, (device, future)
                in enumerate(zip(devices, futures, strict=True))}
