"""Experiments as data: run every baseline of an experiment file, resumably, and score it.

    python -m ident3d.baselines.experiment baselines/cpu_track.toml OUT               # everything
    python -m ident3d.baselines.experiment baselines/cpu_track.toml OUT --runs v2-supervised v2-pixels
    python -m ident3d.baselines.experiment baselines/cpu_track.toml OUT --add-entries  # public-split entries
    python -m ident3d.baselines.experiment baselines/cpu_track.toml OUT --add-entries --verify KEY  # verified
    python -m ident3d.baselines.experiment baselines/cpu_track.toml OUT --rescore      # re-score them
    python -m ident3d.baselines.experiment baselines/cpu_track.toml OUT --rescore --refreshed NEW # companions

An experiment file (``baselines/cpu_track.toml`` documents the format) names its data sets (a track,
exactly rendered pairs, or a custom render), its budgets, and its runs: a preset on a data set at a
budget, with ``--set`` overrides and seeds. The driver renders and packs the data
(``ident3d.render.job.render_split``, ``ident3d.packing.pack_split``: what ``ident3d render`` and
``ident3d pack`` call), trains each run (``ident3d.baselines.train.train`` on the config
``load_preset`` builds, resumed from its checkpoint after an interruption), exports the pixel
read-out for ``preset = "pixels"``, scores every encoder under every protocol
(``ident3d.evaluation.evaluate``) and writes ``OUT/REPRODUCTION.md`` (the report of
``ident3d.baselines.reproduction``). Every step is skipped when its output exists, and the data sets
and runs are jobs of the experiments' driver (``ident3d.baselines.driver``), so several processes (or
cluster jobs on a shared folder) may run one file into one OUT. Each run folder holds
``experiment.json``: its name, seed group, data, preset and seed, which the report reads.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tomllib
from dataclasses import asdict, dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from ident3d import atomic
from ident3d.baselines import presets
from ident3d.baselines.driver import Job, run_jobs
from ident3d.errors import Ident3dError
from ident3d.protocols import REGISTRY, result_file
from ident3d.tracks import get_track

RUN_RECORD = "experiment.json"


class ExperimentError(Ident3dError):
    """An experiment file that cannot be run, with the key named."""


@dataclass(frozen=True)
class Run:
    folder: str  # NAME or NAME-sSEED: the run folder under OUT/runs and the entry id's suffix
    group: str  # the [[runs]] name: seeds of one run form one group
    data: str
    preset: str
    seed: int
    budget: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    continues: str | None = None  # a run folder under the same OUT whose checkpoint this run may start from
    starts_from: str | None = None  # a finished run folder under the same OUT whose trunk and head start it


@dataclass(frozen=True)
class Experiment:
    source: Path
    entry_prefix: str
    checkpoint_every: int
    data: dict[str, dict[str, Any]]
    runs: tuple[Run, ...]
    label: str = "baseline"  # in each entry's name: "<run> (<label>)"

    def select(self, only: list[str] | None, missing_ok: bool = False) -> list[Run]:
        """The runs named in ``only`` (all when it is empty), in the order named (a run named twice
        once): a run folder's name selects that run alone, so an entry's reproduce command trains that
        one run; any other name selects every seed of the [[runs]] group of that name, in the file's
        order. A name of no run is an error unless ``missing_ok``."""
        if not only:
            return list(self.runs)
        folders = {run.folder for run in self.runs}
        groups = {run.group for run in self.runs}
        unknown = sorted(set(only) - folders - groups)
        if unknown and not missing_ok:
            raise ExperimentError(f"{self.source}: no run named {unknown[0]!r}. Fix: name one of "
                                  f"{', '.join(dict.fromkeys(run.group for run in self.runs))}.")
        named = {run.folder: run for name in only for run in self.runs
                 if run.folder == name or (run.group == name and name not in folders)}
        return list(named.values())

    def data_root(self, out: Path, name: str) -> Path:
        return Path(out) / "data" / name

    def entry_id(self, run: Run) -> str:
        """The id of ``run``'s entries, one per protocol (``leaderboard/entries/<protocol>/<id>.json``):
        made here, never parsed."""
        return f"{self.entry_prefix}_{run.folder}"

    def data_ready(self, out: Path, name: str, train: bool = True) -> Path:
        """The marker ``prepare_data`` writes last, beside the data set (not in it): rendered and packed
        (with its training split, or without it)."""
        return Path(out) / "data" / (f".{name}.ready" if train else f".{name}.test.ready")


def safe_name(name: str) -> bool:
    """A run's name becomes a folder and an entry id: plain characters only, no way out of its folder."""
    return re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) is not None and ".." not in name


def load_experiment(path: Path) -> Experiment:
    """Parse and check an experiment file; every problem names the key and the fix. A process parses
    each file content once (the reports read one experiment from several producers)."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ExperimentError(f"{path}: not a readable TOML file ({error}). Fix: see "
                              "baselines/cpu_track.toml.") from None
    return _parsed(Path(path), text)


@lru_cache(maxsize=16)
def _parsed(path: Path, text: str) -> Experiment:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ExperimentError(f"{path}: not a readable TOML file ({error}). Fix: see "
                              "baselines/cpu_track.toml.") from None
    data, budgets = document.get("data", {}), document.get("budgets", {})
    for name, table in data.items():
        kinds = [k for k in ("track", "pairs", "render") if k in table]
        if len(kinds) != 1:
            raise ExperimentError(f"{path}: data.{name} needs exactly one of track, pairs, render (has "
                                  f"{kinds or 'none'}). Fix: give one.")
        if isinstance(table.get("pairs", {}).get("scale"), str):  # the named preset's scales, not a copy
            table["pairs"]["scale"] = _preset_scale(path, f"data.{name}.pairs.scale", table["pairs"]["scale"])
        if "test" in table and table["test"] not in data:
            raise ExperimentError(f"{path}: data.{name}.test = {table['test']!r} is no data set. Fix: name "
                                  f"one of {', '.join(data)}.")
    runs = []
    for i, table in enumerate(document.get("runs", [])):
        where = f"{path}: runs[{i}] ({table.get('name', 'no name')})"
        unknown = set(table) - {"name", "data", "preset", "budget", "seed", "seeds", "set", "continues",
                                "starts_from"}
        if unknown or not {"name", "data", "preset"} <= set(table):
            raise ExperimentError(f"{where}: needs name, data and preset; unknown keys {sorted(unknown)}. "
                                  "Fix: see baselines/cpu_track.toml.")
        if not safe_name(str(table["name"])):
            raise ExperimentError(f"{where}: name {table['name']!r} is not a folder name (letters, digits, "
                                  "'-', '_' and single dots, starting with a letter or digit). Fix: rename "
                                  "it.")
        for key in ("continues", "starts_from"):
            if key in table and not safe_name(str(table[key])):
                raise ExperimentError(f"{where}: {key} {table[key]!r} is not a run folder name. Fix: name "
                                      "the folder of a run of this file (NAME or NAME-sSEED).")
        if table["data"] not in data:
            raise ExperimentError(f"{where}: data {table['data']!r} is not defined. Fix: add "
                                  f"[data.{table['data']}].")
        budget = {}
        if table["preset"] != "pixels":
            if table.get("budget") not in budgets:
                raise ExperimentError(f"{where}: budget {table.get('budget')!r} is not one of "
                                      f"{', '.join(budgets)}. Fix: name one.")
            budget = budgets[table["budget"]]
        seeds = table.get("seeds")
        for seed in seeds if seeds is not None else [table.get("seed", 0)]:
            folder = f"{table['name']}-s{seed}" if seeds is not None else table["name"]
            runs.append(Run(folder, table["name"], table["data"], table["preset"], int(seed), dict(budget),
                            dict(table.get("set", {})), table.get("continues"), table.get("starts_from")))
    folders = [r.folder for r in runs]
    if len(set(folders)) != len(folders):
        raise ExperimentError(f"{path}: two runs share a folder name. Fix: give each [[runs]] its own name.")
    return Experiment(Path(path), document.get("entry_prefix", "Experiment"),
                      int(document.get("checkpoint_every", 200)), data, tuple(runs),
                      str(document.get("label", "baseline")))


def _preset_scale(path: Path, key: str, name: str) -> list[float]:
    if name not in presets.names():
        raise ExperimentError(f"{path}: {key} = {name!r} is neither a list of scales nor a preset. Fix: "
                              f"name one of {', '.join(presets.names())}.")
    scale = presets.read(name).get("scale")
    if not isinstance(scale, list):
        raise ExperimentError(f"{path}: {key} = {name!r}: that preset has one scale, not one per latent. "
                              "Fix: write the list of scales.")
    return scale


def render_jobs(experiment: Experiment, out: Path, name: str) -> list:
    """The render jobs of the data set ``name``, as ``ident3d render`` plans them from the same
    settings (every split of a track, the test split first; pairs; or a custom render)."""
    from ident3d.render.job import plan_job, plan_track_job
    from ident3d.render.settings import resolve_settings

    table, root = experiment.data[name], experiment.data_root(out, name)
    if "track" in table:  # an OOD track's OOD splits too
        track = get_track(table["track"])
        names = sorted(track.splits, key=lambda s: (s == "train", s != "test", s))
        return [plan_track_job(root, track, split) for split in names]
    if "pairs" in table:
        p = table["pairs"]
        if "style" in p:  # a content/style split: the style latents resampled, the rest shared
            pairs = {"conditional": "normal", "scale": 0.1, "beta": None, "style": list(p["style"])}
        else:
            scale = [float(s) for s in (p["scale"] if isinstance(p["scale"], list) else [p["scale"]])]
            pairs = {"conditional": p.get("conditional", "normal"),
                     "scale": scale[0] if len(scale) == 1 else scale, "beta": None}
        settings = resolve_settings(p["preset"], p["resolution"], None, device="cpu")
        return [plan_job(root, p.get("split", "train"), n=p["n"], seed=p["seed"], variant=p["variant"],
                         settings=settings, pairs=pairs)]
    r = table["render"]
    settings = resolve_settings(r.get("preset", "preview"), r["resolution"], r.get("samples"), device="cpu")
    return [plan_job(root, split, n=r[f"n_{split}"], seed=r[f"seed_{split}"], variant=r.get("variant", "v2"),
                     settings=settings) for split in ("test", "train")]


def prepare_data(experiment: Experiment, out: Path, name: str, workers: int, train: bool = True) -> Path:
    """Render (or resume rendering) and pack the data set ``name`` (without its training split when
    ``train`` is False: no selected run trains on it); return its root."""
    from ident3d.packing import pack_split
    from ident3d.render.job import render_split

    table, root = experiment.data[name], experiment.data_root(out, name)
    for job in render_jobs(experiment, out, name):
        if job.layout.split == "train" and not train:
            continue
        render_split(job, workers=workers, progress=False)
        if not job.layout.packed.exists():
            pack_split(root, job.layout.split, progress=False)
    if "test" in table and not (root / "test").exists():  # scored on another data set's test split
        root.mkdir(parents=True, exist_ok=True)  # nothing rendered here when no selected run trains on it
        os.symlink((experiment.data_root(out, table["test"]) / "test").resolve(), root / "test")
    for ready in {experiment.data_ready(out, name, train=False), experiment.data_ready(out, name, train)}:
        atomic.write_bytes(ready, b"")
    return root


def resolution(root: Path) -> int:
    from ident3d.datasets import ThreeDIdent

    return ThreeDIdent(root, "test").resolution


def _start_from(source: Path, folder: Path) -> None:
    """Start a run from a finished shorter run's last checkpoint and log (``continues``): training is a
    pure function of (seed, step), so this equals training from step 0; ``ident3d train --resume`` then
    refuses any setting that differs beyond the resumable ones (the number of steps, logging). A source
    not finished under OUT is no error: the run trains from step 0."""
    if not (source / RUN_RECORD).exists() or not (source / "checkpoint.safetensors").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("log.jsonl", "checkpoint.safetensors", "config.json"):  # config.json last: it marks a run
        shutil.copyfile(source / name, folder / name)


def _finished_checkpoint(source: Path, run: Run) -> Path:
    """The last checkpoint of the finished run ``source`` (``starts_from``), resolved: a run that starts
    from an unfinished one would start from whatever step it reached."""
    if not (source / RUN_RECORD).exists():
        raise ExperimentError(f"run {run.folder}: starts_from {source.name}, which has not finished under "
                              f"{source.parent}. Fix: run {source.name} first (list it before {run.folder} "
                              "in --runs).")
    return (source / "checkpoint.safetensors").resolve()


def run_one(experiment: Experiment, run: Run, out: Path, device: str) -> Path:
    """Train (or resume) ``run``, export it, score it under every protocol (REGISTRY); return its folder."""
    folder, data = Path(out) / "runs" / run.folder, experiment.data_root(out, run.data)
    encoder = folder / "encoder.pt2"
    if run.preset == "pixels":
        if not encoder.exists():
            folder.mkdir(parents=True, exist_ok=True)
            from ident3d.baselines.pixels import export_pixel_readout

            export_pixel_readout(encoder, resolution(data))
    elif not encoder.exists():
        from ident3d.baselines.config import load_preset
        from ident3d.baselines.train import train

        budget = run.budget
        settings = {"checkpoint_every": experiment.checkpoint_every, **run.overrides,  # the budget wins
                    "iterations": budget["steps"], "batch_size": budget["batch_size"], "lr": budget["lr"],
                    "seed": run.seed, "device": device, "data": str(data.resolve())}
        if run.starts_from:
            settings["init_from"] = str(_finished_checkpoint(Path(out) / "runs" / run.starts_from, run))
        if not (folder / "config.json").exists() and run.continues:
            _start_from(Path(out) / "runs" / run.continues, folder)
        train(load_preset(run.preset, **settings), folder, resume=(folder / "config.json").exists(),
              progress=False)
    missing = [protocol for protocol in REGISTRY if not (folder / result_file(protocol)).exists()]
    if missing:  # one encoding for every protocol the run has no result of yet
        from ident3d.evaluation import evaluate_protocols

        for protocol, result in evaluate_protocols(encoder, data, missing, name=run.folder,
                                                   progress=False).items():
            result.save(folder / result_file(protocol))
    atomic.write_json(folder / RUN_RECORD, asdict(run))  # last: `ident3d train` wants a fresh folder
    return folder


def run_experiment(experiment: Experiment, out: Path, only: list[str] | None = None, device: str = "cpu",
                   workers: int = 2) -> list[Path]:
    """Every run (or those ``only`` selects: ``Experiment.select``), data first, as jobs of the driver
    (``ident3d.baselines.driver``: another process may run the same file into ``out`` at the same
    time); return the folders of the finished runs."""
    runs = experiment.select(only)
    needed = dict.fromkeys(name for r in runs
                           for name in (experiment.data[r.data].get("test"), r.data) if name)
    trained_on = {r.data for r in runs if r.preset != "pixels"}  # the pixel read-out needs no training split
    jobs = [Job(f"data-{name}" + ("" if name in trained_on else "-test"),
                experiment.data_ready(out, name, train=name in trained_on),
                partial(prepare_data, experiment, out, name, workers, train=name in trained_on), wait=True)
            for name in needed]
    jobs += [Job(f"run-{run.folder}", Path(out) / "runs" / run.folder / RUN_RECORD,
                 partial(run_one, experiment, run, out, device)) for run in runs]
    run_jobs(jobs, Path(out))
    folders = [Path(out) / "runs" / run.folder for run in runs]
    return [folder for folder in folders if (folder / RUN_RECORD).exists()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", type=Path, help="the experiment file (baselines/cpu_track.toml)")
    parser.add_argument("out", type=Path, help="folder for the data, the runs and REPRODUCTION.md")
    parser.add_argument("--runs", nargs="+", metavar="NAME", help="only these runs, in this order: "
                        "a run folder (NAME or NAME-sSEED) alone, or every seed of a [[runs]] name that "
                        "is no folder")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the budgets stay; the numbers "
                                                        "then are not the entries')")
    parser.add_argument("--workers", type=int, default=2, help="render processes")
    parser.add_argument("--add-entries", action="store_true",
                        help="re-score every finished run and write its public-split leaderboard entries")
    parser.add_argument("--verify", metavar="KEY",
                        help="with --add-entries: also score a fresh draw of each run's track, sign it with "
                             "the verifier key KEY (ident3d leaderboard add --verifier) and write verified "
                             "entries <id>-verified instead")
    parser.add_argument("--rescore", action="store_true", help="re-score every local checkpoint against its "
                                                               "entry and print a table")
    parser.add_argument("--refreshed", type=Path, metavar="DIR",
                        help="with --rescore: write each entry whose every metric matches into DIR, around "
                             "its fresh result (new companion sections); then move them over the old")
    parser.add_argument("--entries", type=Path, default=Path("leaderboard/entries"), help="entry folder")
    args = parser.parse_args(argv)
    from ident3d.baselines.baseline_entries import add_entries, rescore_entries
    from ident3d.baselines.reproduction import summarize
    from ident3d.outputs import check_not_an_input

    try:
        experiment = load_experiment(args.experiment)
        if args.rescore:
            if args.refreshed is not None:
                check_not_an_input(args.refreshed, "--refreshed", (args.entries, args.out))
                args.refreshed.mkdir(parents=True, exist_ok=True)
            print(rescore_entries(experiment, args.out, args.entries, args.refreshed))
            return 0
        run_experiment(experiment, args.out, args.runs, args.device, args.workers)
        report = summarize(args.out)
        atomic.write_bytes(args.out / "REPRODUCTION.md", report.encode())
        print(report)
        if args.add_entries:
            for path in add_entries(experiment, args.out, args.entries, verifier=args.verify):
                print(path)
    except Ident3dError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
