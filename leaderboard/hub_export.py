"""Leaderboard entries in the formats the Hugging Face Hub reads from a model repository:
the model card's ``model-index`` (``ident3d leaderboard export --format model-index``, YAML to put in
the card's header) and the newer ``.eval_results/*.yaml`` files (``--format eval-results``).

Each metric carries its protocol and the protocol's version; the dataset is the entry's track, with
the sha256 that pins its test split as the revision; ``verified`` is set only for entries whose model
file the evaluator re-scored (status ``verified``).
"""

from __future__ import annotations

from typing import Any

from ident3d.errors import ResultError
from ident3d.leaderboard.ranking import scores, shown_entry, signer, status
from ident3d.protocols import METRICS, REGISTRY
from ident3d.tracks import get_track
from ident3d.yaml_block import yaml_lines

FORMATS = ("model-index", "eval-results")
TASK = {"type": "image-feature-extraction", "name": "Latent identifiability (read-out of the factors)"}


def protocol_version(entry: dict[str, Any]) -> str | None:
    """The version of the protocol the entry's numbers were computed with: the result's record, the
    first version for results written before versions were recorded, none for numbers from a paper."""
    result = entry.get("result")
    if not isinstance(result, dict):
        return None
    return result.get("protocol_version") or REGISTRY[entry["protocol"]].changelog[0][0]


def dataset_of(entry: dict[str, Any]) -> dict[str, str]:
    """The entry's test data: its track (name, title, config, revision) or its custom key."""
    key = entry["dataset"]
    if key.startswith("custom:"):
        return {"type": key, "name": f"custom data ({key})", "split": "test"}
    track = get_track(key)
    test = track.splits["test"]
    revision = test.content_sha256 or test.latents_sha256
    return {"type": track.name, "name": track.title, "config": track.id, "split": "test",
            **({"revision": revision} if revision else {})}


def _metrics(entry: dict[str, Any]) -> list[tuple[str, float]]:
    """The scores the board shows: a verified entry's fresh draw, any other entry's metrics."""
    return [(k, v) for k, v in sorted(scores(entry).items()) if v is not None]


def model_index(entry: dict[str, Any], hub_dataset: str | None = None) -> list[dict[str, Any]]:
    """The ``model-index`` list of a model card for one entry."""
    version = protocol_version(entry)
    dataset = {**dataset_of(entry), **({"type": hub_dataset} if hub_dataset else {})}
    metrics = []
    for key, value in _metrics(entry):
        label = f"{METRICS[key].title}, {entry['protocol']}" + (f" {version}" if version else "")
        metrics.append({"type": key, "value": value, "name": label, "config": entry["protocol"],
                        **({"args": {"protocol_version": version}} if version else {}),
                        **({"verified": True} if signer(entry) else {})})
    return [{"name": entry["name"], "results": [{"task": TASK, "dataset": dataset, "metrics": metrics}]}]


def eval_results(entry: dict[str, Any], hub_dataset: str) -> list[dict[str, Any]]:
    """The ``.eval_results/*.yaml`` list for one entry: one item per metric, on ``hub_dataset`` (the Hub
    id the track's bundle was published under)."""
    version = protocol_version(entry)
    revision = dataset_of(entry).get("revision")
    notes = (f"{status(entry)}; ident3d leaderboard entry {entry['id']}; protocol {entry['protocol']}"
             + (f" {version}" if version else " as reported in the paper") + f"; track {entry['dataset']}")
    return [{"dataset": {"id": hub_dataset, "task_id": f"{entry['protocol']}/{key}",
                         **({"revision": revision} if revision else {})},
             "value": value, "notes": notes} for key, value in _metrics(entry)]


def export(entry: dict[str, Any], fmt: str, hub_dataset: str | None = None) -> str:
    """The YAML text of one entry in ``fmt`` (a verified row as the board shows it: only what its
    record signs)."""
    entry = shown_entry(entry)
    if fmt == "model-index":
        return "\n".join(yaml_lines({"model-index": model_index(entry, hub_dataset)})) + "\n"
    if hub_dataset is None:
        raise ResultError("--format eval-results needs --hub-dataset ID: the Hub id of the dataset the "
                          "results are on (the bundle `ident3d publish` wrote, once uploaded). Fix: pass it.")
    return "\n".join(yaml_lines(eval_results(entry, hub_dataset))) + "\n"
