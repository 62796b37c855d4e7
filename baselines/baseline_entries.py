"""The leaderboard entries of an experiment's runs (ident3d.baselines.experiment): what each run is
(positives, loss, space, budget, training data), its verified entries, and the check that re-scores
every local checkpoint against its entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ident3d import atomic
from ident3d.baselines.experiment import Experiment, ExperimentError, Run
from ident3d.baselines.reproduction import load_runs, paired_spec, training_minutes
from ident3d.leaderboard.ranking import PIXELS_LOSS, SUPERVISED_POSITIVES
from ident3d.manifest import read_manifest
from ident3d.protocols import DEFAULT, REGISTRY, result_file

LOSS_NAMES = {"lp": "InfoNCE, L2 (Normal)", "vmf": "InfoNCE, dot product (vMF)", "mse": "MSE to the latents",
              "aninfonce": "AnInfoNCE (learned diagonal Lambda)",
              "aninfonce-isotropic": "InfoNCE with one learned precision (AnInfoNCE's isotropic control)"}


def describe(run: dict[str, Any]) -> dict[str, str]:
    """The entry fields that say what a run is: positives, loss, model space and budget."""
    config = run["config"]
    if config is None:
        return {"positives": "none", "loss": PIXELS_LOSS, "model_space": "pixels",
                "budget": "no training: each image average-pooled to 8 x 8 (baselines/pixels.py)"}
    if config["positives"] == "anchors":
        positives = SUPERVISED_POSITIVES
    elif config["positives"] == "augment":
        positives = "SimCLR image augmentations"
    elif config["positives"] == "rendered":
        pairs = paired_spec(config)
        positives = (f"content/style pairs rendered exactly: {', '.join(pairs['style'])} redrawn, the other "
                     "latents shared" if pairs.get("style") else
                     f"{pairs['conditional'].capitalize()} (scale {pairs['scale']}), pairs rendered exactly "
                     "(no snapping)")
    else:
        positives = f"{config['conditional'].capitalize()} (scale {config['scale']})"
    unit = "images" if config["positives"] == "anchors" else "pairs"
    minutes = training_minutes(run)
    budget = (f"{config['iterations']:,} steps of {config['batch_size']} {unit} at lr {config['lr']:g}, "
              f"seed {config['seed']}")
    if minutes:
        budget += f", {minutes[1]:.0f} minutes of training on 2 CPU cores"
    return {"positives": positives, "loss": LOSS_NAMES.get(config["loss"], config["loss"]),
            "model_space": config["space"], "budget": budget}


def training_data(config: dict[str, Any] | None, track: str) -> str:
    if config is None:
        return "none"
    if config["positives"] == "rendered" and paired_spec(config).get("style"):
        return f"the train split of {track} (ident3d render --track)"
    if config["positives"] == "rendered":
        n = read_manifest(Path(config["data"]) / config["train_split"] / "manifest.json")["n"]
        return (f"{n // 2:,} exactly rendered positive pairs at the render settings of {track} "
                "(ident3d render --pairs; baselines/cpu_track.toml)")
    return f"the train split of {track} (ident3d render --track)"


def add_entries(experiment: Experiment, out: Path, entries: Path, verifier: str | None = None
                ) -> list[Path]:
    """Re-score every finished run's encoder under both protocols (the leaderboard's own re-scoring)
    and write an entry for each that has none yet: public-split (scored from the model file on the
    public split), or with ``verifier`` (a key name, ``ident3d.leaderboard.verification``) verified:
    the same run also scores a fresh draw of the run's track (one draw, rendered and encoded once, for
    both protocols, as the split is encoded once for both), the verifier signs what it measured,
    and the entry ``<id>-verified`` stands beside the run's public-split seed group (in no group: it
    is another status). A run already entered is skipped, so the step resumes."""
    from ident3d.leaderboard.entries import (
        Entry,
        entry_from_result,
        entry_path,
        load_entries,
        rescore_together,
        same_model,
        write_entry,
    )
    from ident3d.leaderboard.keyring import keyring_folder, read_keyring
    from ident3d.leaderboard.verification import Signer
    from ident3d.results import Result

    signer = Signer.load_or_create(verifier) if verifier is not None else None
    keyring = keyring_folder(entries)
    if signer is not None and read_keyring(keyring).by_fingerprint(signer.fingerprint) is None:
        raise ExperimentError(f"--verifier {verifier}: this key is not in {keyring}, so the rows "
                              "it signs would be unverified claims. Fix: a maintainer adds it first, in a "
                              f"change of its own (`ident3d leaderboard keyring add {verifier} --holder ... "
                              "--role machine --kept ...`).")
    written = []
    finished = load_runs(out)
    for planned in experiment.runs:
        run = finished.get(planned.folder)
        if run is None:
            continue
        about = describe(run)
        data = experiment.data_root(out, planned.data)
        track = run["results"][DEFAULT]["dataset"].get("track", "custom data")
        entry_id = experiment.entry_id(planned) + ("-verified" if signer is not None else "")
        checkpoint = run["folder"] / "encoder.pt2"
        todo = [protocol for protocol in REGISTRY
                if not entry_path(entries, {"protocol": protocol, "id": entry_id}).exists()]
        if not todo:
            continue
        for protocol in todo:
            taken = same_model(load_entries(entries), atomic.sha256_file(checkpoint), (track, protocol))
            if taken:
                raise ExperimentError(f"{checkpoint}: already entry {taken[0]} of {track} · {protocol}; one "
                                      "model file has one entry per table. Fix: retrain the run into a new "
                                      "OUT (its export is a new file), or remove that entry on purpose.")
        # both protocols from one encoding and, when verifying, one fresh draw
        public = [Result.parse({k: v for k, v in run["results"][protocol].items() if k != "fresh"},
                               str(run["folder"] / result_file(protocol))) for protocol in todo]
        rescored = rescore_together(public, checkpoint, data, fresh="track" if signer is not None else None,
                                    progress=False)
        for result in rescored:
            entry = entry_from_result(
                result, entry_id, status="verified" if signer is not None else "public-split",
                name=f"{planned.folder} ({experiment.label})", authors=["ident3d maintainers"],
                training_data=training_data(run["config"], track), positives=about["positives"],
                loss=about["loss"], model_space=about["model_space"],
                footnote=f"{about['budget']}; reproduce: {reproduce_command(experiment, planned)}",
                seed_group=None if signer is not None else planned.group)
            if signer is not None:
                entry = Entry.parse(signer.sign_entry(entry.document), f"entry {entry_id}")
            written.append(write_entry(entry, entries))
    return written


def reproduce_command(experiment: Experiment, run: Run) -> str:
    return f"python -m ident3d.baselines.experiment {experiment.source.as_posix()} OUT --runs {run.folder}"


def rescore_entries(experiment: Experiment, out: Path, entries: Path, refreshed: Path | None = None) -> str:
    """Re-score every local checkpoint against its entry with the leaderboard's own re-scoring: the
    file's sha256, and every metric (means and per latent) within its tolerance. A run trained again
    (training is deterministic, its export is not byte for byte) matches in scores with other bytes.
    With ``refreshed``, each entry whose every metric matches is also written there around its fresh
    result (the companion sections of today's evaluator, this file's sha256), ready to replace the old."""
    from ident3d.errors import ResultError
    from ident3d.leaderboard.entries import Entry, entry_path, rescore_entry, write_entry
    from ident3d.readers import read_json

    lines = ["| entry | checkpoint sha256 | re-scored | verdict |", "|---|---|---|---|"]
    for planned in experiment.runs:
        checkpoint = Path(out) / "runs" / planned.folder / "encoder.pt2"
        if not checkpoint.exists():
            continue
        for protocol in REGISTRY:
            entry_id = f"{protocol}/{experiment.entry_id(planned)}"
            path = entry_path(entries, {"protocol": protocol, "id": experiment.entry_id(planned)})
            if not path.exists():
                lines.append(f"| {entry_id} | – | – | no entry (add it with --add-entries) |")
                continue
            shown = None
            try:  # an entry file that is no valid entry is a difference too, named by its field
                shown = read_json(path, ResultError, "restore it from git or add it again with --add-entries")
                checked = rescore_entry(Entry.parse(shown, str(path)), checkpoint,
                                        experiment.data_root(out, planned.data))
            except ResultError as error:
                recorded = shown.get("checkpoint_sha256") if isinstance(shown, dict) else None
                same_file = atomic.sha256_file(checkpoint) == recorded
                lines.append(f"| {entry_id} | {'same' if same_file else 'DIFFERENT'} | "
                             f"{str(error).split('. Fix:')[0]} | DIFFERS |")
                continue
            if refreshed is not None:
                write_entry(checked.entry, refreshed)
            file = "same" if checked.same_file else "DIFFERENT"
            verdict = "matches" if checked.same_file else "same scores from other bytes (trained again)"
            lines.append(f"| {entry_id} | {file} | every metric matches | {verdict} |")
    return "\n".join(lines)
