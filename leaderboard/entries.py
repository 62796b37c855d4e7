"""Leaderboard entries: one JSON file per model and scoring protocol, in
``leaderboard/entries/<protocol>/<ID>.json``.

The protocol is a key, not part of a name: one model scored under two protocols is one ID in two
protocol folders, and an ID is unique within its protocol's folder. An entry is the evaluator's result
plus metadata, checked against the versioned schema shipped in ``leaderboard/schemas/entry-v1.json``.
Errors name the file and the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

from ident3d import atomic
from ident3d.errors import ResultError
from ident3d.leaderboard.keyring import keyring_folder
from ident3d.leaderboard.verification import Proof, prove
from ident3d.protocols import per_latent_metrics
from ident3d.readers import read_json
from ident3d.results import Result, schema_error, schema_problem, shipped_schema, validate_result
from ident3d.tracks import tracks

ENTRY_SCHEMA = "ident3d-leaderboard-entry/1"
RESCORED = ("verified", "public-split")  # scored by the evaluator from a checkpoint of known sha256
ENTRIES_DIR = Path(__file__).resolve().parent / "entries"


def entry_schema() -> dict[str, Any]:
    return shipped_schema("ident3d.leaderboard.schemas", "entry-v1.json")


@dataclass(frozen=True)
class Entry(Mapping[str, Any]):
    """An entry document that passed ``validate_entry``: every way of making one validates it, once
    (``entry_from_result``, ``Entry.parse`` of a file), and ``write_entry`` writes it without checking
    it again. Reads like the document."""

    document: dict[str, Any]
    source: InitVar[str] = "entry"  # what an error names
    around: InitVar[Result | None] = None  # the validated Result whose very document the entry embeds
    # what `load_entries` found of a "verified" status: the keyring key that signed it, or why not
    proof: Proof | None = field(default=None, compare=False)

    def __post_init__(self, source: str, around: Result | None) -> None:
        checked = around is not None and around.document is self.document.get("result")
        validate_entry(self.document, source, result_checked=checked)

    @classmethod
    def parse(cls, document: Any, source: str) -> Entry:
        return cls(document, source)

    def __getitem__(self, key: str) -> Any:
        return self.document[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.document)

    def __len__(self) -> int:
        return len(self.document)

    @property
    def key(self) -> str:
        """``<protocol>/<ID>``: what names the entry across protocols (its path under the entries folder)."""
        return entry_key(self.document)


def entry_key(entry: Mapping[str, Any]) -> str:
    return f"{entry['protocol']}/{entry['id']}"


def entry_path(directory: Path, entry: Mapping[str, Any]) -> Path:
    return Path(directory) / entry["protocol"] / f"{entry['id']}.json"


def validate_entry(entry: Any, source: str, result_checked: bool = False) -> dict[str, Any]:
    """Raise ResultError naming ``source`` and the first offending field; return the entry. With
    ``result_checked`` the embedded result is the document of a ``Result``, validated when made."""
    error = schema_error(entry, "ident3d.leaderboard.schemas", "entry-v1.json")
    if error is not None:
        raise ResultError(f"{source}: {schema_problem(error)}")
    if entry.get("metrics_std") and entry["status"] != "reported-in-paper":
        raise ResultError(f"{source}: field metrics_std: only a row copied from a paper's table carries its "
                          "own spread (a seed group's row computes its sd from its runs). Fix: remove it, or "
                          "enter each seed's run with one --seed-group")
    if entry["result"] is not None:
        try:
            if not result_checked:
                validate_result(entry["result"])
        except ResultError as error:
            raise ResultError(f"{source}: field result/{str(error).removeprefix('result field ')}"
                              ) from None
        scored_on = entry["result"]["dataset"].get("track")
        if scored_on is not None and entry["dataset"] != scored_on:
            raise ResultError(f"{source}: field dataset: {entry['dataset']!r} is not the track the result "
                              f"was scored on ({scored_on!r})")
        problem = track_mismatch(entry["result"])
        if problem:
            raise ResultError(f"{source}: field result/{problem}")
        if entry["result"]["protocol"] != entry["protocol"]:
            raise ResultError(f"{source}: field protocol: {entry['protocol']!r} disagrees with the "
                              f"result's {entry['result']['protocol']!r}")
        scored = entry["result"]["model"]["sha256"]
        if entry["status"] in RESCORED and entry["checkpoint_sha256"] != scored:
            raise ResultError(f"{source}: field checkpoint_sha256: {entry['checkpoint_sha256']} is not "
                              f"the scored model's {scored}")
        problem = fresh_problem(entry) if entry["status"] == "verified" else None
        if problem:
            raise ResultError(f"{source}: field result/fresh: {problem}")
        for key in per_latent_metrics():
            if entry["metrics"].get(key) != entry["result"]["metrics"].get(key):
                raise ResultError(f"{source}: field metrics/{key}: {entry['metrics'].get(key)} "
                                  f"differs from the result's {entry['result']['metrics'].get(key)}")
    return entry


def fresh_problem(entry: Mapping[str, Any]) -> str | None:
    """Why a ``verified`` entry's result does not prove an unseen score, or None: the verifier must
    have rendered a draw of the entry's own track from a seed drawn then (a re-rendered, revealed
    seed proves only that the numbers reproduce)."""
    fresh = entry["result"].get("fresh")
    if fresh is None:
        return ("a verified entry is scored on a fresh draw, and this result has none. Fix: "
                "`ident3d leaderboard add --checkpoint FILE --data ROOT` scores one")
    if fresh["seed_source"] != "entropy":
        return "the draw was rendered from a given seed, so the model could have seen it"
    if fresh["track"] != entry["dataset"]:
        return f"the draw is of {fresh['track']}, the entry's track is {entry['dataset']}"
    smallest = tracks()[entry["dataset"].partition("@")[0]].fresh_min or 0
    if fresh["n"] < smallest:
        return (f"the draw has {fresh['n']:,} images; a verified draw of {entry['dataset']} has at least "
                f"{smallest:,} (on fewer, MCC is biased upwards: docs/submissions.md, \"How large a draw\")")
    return None


def load_entries(directory: Path = ENTRIES_DIR, keyring: Path | None = None) -> list[Entry]:
    """Every entry of ``directory`` (``<protocol>/<ID>.json``), parsed once (validated), sorted by
    protocol and ID; an entry's protocol must be its folder's name and its ID the file's. Each entry
    that says "verified" carries its ``proof``: the ``keyring`` key (default: ``verifiers/`` beside
    ``directory``) that signed its record, or why the claim fails."""
    directory = Path(directory)
    stray = sorted(directory.glob("*.json"))
    if stray:
        raise ResultError(f"{stray[0]}: an entry file directly in {directory}; entries live in "
                          f"{directory}/<protocol>/<ID>.json, one folder per scoring protocol. Fix: move it "
                          "into the folder named by its protocol field.")
    entries = []
    for path in sorted(directory.glob("*/*.json"), key=lambda p: (p.parent.name, p.stem)):
        entry = Entry.parse(read_json(path, ResultError, "fix or remove this entry file"), str(path))
        for field_name, expected, where in (("protocol", path.parent.name, "folder"),
                                            ("id", path.stem, "file")):
            if entry[field_name] != expected:
                raise ResultError(f"{path}: field {field_name}: {entry[field_name]!r} must equal the {where} "
                                  f"name {expected!r}. Fix: move the file or correct the field.")
        entries.append(entry)
    proofs = prove(entries, keyring_folder(directory) if keyring is None else keyring)
    for entry, proof in zip(entries, proofs, strict=True):
        object.__setattr__(entry, "proof", proof)
    return entries


def find_entry(entries: list[Entry], name: str, where: Path | str) -> Entry:
    """The entry ``name`` names: ``<protocol>/<ID>``, or an ID that only one protocol's folder holds."""
    matches = [e for e in entries if name in (e.key, e["id"])]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ResultError(f"{where}: entry {name!r} exists under {len(matches)} protocols "
                          f"({', '.join(e['protocol'] for e in matches)}). Fix: name one as PROTOCOL/ID, "
                          f"e.g. {matches[0].key}.")
    raise ResultError(f"{where}: no entry {name!r} ({len(entries)} entries). Fix: pass an id listed in "
                      "LEADERBOARD.md, or PROTOCOL/ID as `ls leaderboard/entries/*` shows them.")


def track_of(result: dict[str, Any]) -> str:
    """The track a result was scored on (the evaluator decides it by verifying the split)."""
    d = result["dataset"]
    if d.get("track"):
        return d["track"]
    # Results from before tracks: custom data, never a track's table.
    return f"custom:{(d.get('manifest_sha256') or '0' * 12)[:12]}"


def track_mismatch(result: dict[str, Any]) -> str | None:
    """What in a result contradicts the track it names (image count, resolution, split, protocol),
    as "field: why"; None when it agrees or names custom data. A hand-edited ``track`` fails here."""
    name = result["dataset"].get("track")
    if not name or name.startswith("custom:"):
        return None
    track = tracks().get(name.partition("@")[0])
    if track is None or track.id != name:
        return f"dataset/track: {name!r} is not a known track (`ident3d tracks` lists them)"
    d = result["dataset"]
    spec = track.splits.get(d["split"])
    if spec is None:
        return f"dataset/split: {d['split']!r} is not a split of {name}"
    if d["n"] != spec.n:
        return f"dataset/n: {d['n']} images, the {d['split']} split of {name} has {spec.n}"
    if d.get("resolution") != [track.resolution, track.resolution]:
        return (f"dataset/resolution: {d.get('resolution')!r}, the images of {name} are "
                f"{track.resolution} x {track.resolution}")
    if result["protocol"] not in track.protocols:
        return f"protocol: {result['protocol']!r} is not scored on {name} ({', '.join(track.protocols)})"
    return None


def entry_from_result(result: Result, entry_id: str, *, status: str = "self-reported",
                      name: str | None = None, authors: list[str] | None = None,
                      paper: str | None = None, code: str | None = None,
                      training_data: str = "unspecified", positives: str = "unspecified",
                      loss: str = "unspecified", model_space: str = "unspecified",
                      footnote: str | None = None, track: str | None = None,
                      seed_group: str | None = None, verification: dict[str, Any] | None = None
                      ) -> Entry:
    """A schema-valid entry around an evaluator result (``Result.load`` reads one from a file).

    ``track``: the table the submitter asks for; refused unless the result was scored on it.
    ``seed_group``: shared by the runs of one method that differ only in their seed.
    ``verification``: a verified entry's signed record (``verification.Signer.sign``).

    The leaderboard API is this, ``write_entry``, ``load_entries`` and
    ``ident3d.leaderboard.build.build`` (what ``ident3d leaderboard add`` and ``build`` call).

    Example:
        ```python
        from pathlib import Path
        from ident3d.leaderboard.build import build
        from ident3d.leaderboard.entries import entry_from_result, load_entries, write_entry
        from ident3d.results import Result

        result = Result.load(Path("runs/smoke/result.json"))
        entry = entry_from_result(result, "Doe2026Contrastive_smoke", authors=["J. Doe"])
        write_entry(entry, Path("my-entries"))          # refuses an ID that exists
        print(len(load_entries(Path("my-entries"))))
        build(Path("my-entries"), Path("MY-LEADERBOARD.md"), Path("my-site/index.html"))
        ```
    """
    validated, result = result, result.document
    scored_on = track_of(result)
    if track is not None and track != scored_on:
        hint = ("it was scored on custom data" if scored_on.startswith("custom:")
                else f"it was scored on {scored_on}")
        raise ResultError(f"field dataset: the result cannot enter the table of {track}: {hint}. Fix: "
                          f"evaluate on a split that `ident3d audit --track {track}` accepts.")
    entry = {
        "schema": ENTRY_SCHEMA,
        "id": entry_id,
        "name": name or result["model"]["name"],
        "authors": authors or ["anonymous"],
        "paper": paper,
        "code": code,
        "training_data": training_data,
        "positives": positives,
        "loss": loss,
        "model_space": model_space,
        "status": status,
        "footnote": footnote,
        "dataset": scored_on,
        "protocol": result["protocol"],
        "metrics": {k: result["metrics"].get(k) for k in per_latent_metrics()},
        "checkpoint_sha256": result["model"]["sha256"] if status in RESCORED else None,
        "result": result,
    }
    if seed_group is not None:
        entry["seed_group"] = seed_group
    if verification is not None:
        entry["verification"] = verification
    return Entry(entry, f"entry {entry_id}", validated)


# The sections of a result a board shows (means, per-latent values, companions, the fresh draw); the
# rest (dataset, model, seeds, versions, timings, the kernel's chosen hyperparameters) are identity.
SHOWN_SECTIONS = ("metrics", "per_latent", "dci", "extrapolation", "ood", "blocks", "fresh")


def _shown_numbers(result: Mapping[str, Any]) -> dict[str, float | None]:
    """Every number a result shows that a re-score must reproduce, by field path: the means, the
    per-latent values, the companions (DCI, extrapolation, OOD splits, blocks) and every number of a
    fresh draw (its scores, per-latent values, companions and gaps; not its timings)."""
    out: dict[str, float | None] = {}
    for section in SHOWN_SECTIONS:
        value = result.get(section)
        if section == "fresh" and value:
            value = {k: v for k, v in value.items() if k not in FRESH_UNCOMPARED}
        if value is not None:
            out.update(_leaves(value, section))
    return out


FRESH_UNCOMPARED = ("seed", "n", "render_s", "score_s", "render_settings", "track", "seed_source")


def _leaves(value: Any, path: str) -> dict[str, float | None]:
    """The numbers (and nulls) under ``value`` by path; a list's items are named by their ``factor`` or
    ``split`` (or ``factors``) when they have one, else by position."""
    if isinstance(value, Mapping):
        return {k: v for key, item in value.items() for k, v in _leaves(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        out: dict[str, float | None] = {}
        for i, item in enumerate(value):
            name = item.get("factor") or item.get("split") or item.get("factors") if isinstance(
                item, Mapping) else None
            out.update(_leaves(item, f"{path}/{'+'.join(name) if isinstance(name, list) else name or i}"))
        return out
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return {path: value}
    return {}


def rescore(result: Result, checkpoint: Path, data: Path, tolerance: float = 1e-4,
            claimed_by: str = "the result file", fresh: int | str | None = None,
            progress: bool = True) -> Result:
    """Score ``checkpoint`` again on ``data`` under the result's protocol and split; return the new
    result (validated by the evaluator) when every number the submitted result shows matches, else
    raise naming the first that differs. A result with a fresh draw is re-scored on that very draw,
    re-rendered from its revealed seed, and its scores, per-latent values and gaps are compared too.
    With ``fresh`` (a number of images, or "track" for the track's default) and no draw to
    reproduce, the same run scores a new fresh draw (``ident3d.fresh``), which the result carries."""
    return rescore_together([result], checkpoint, data, tolerance, claimed_by, fresh, progress)[0]


def rescore_together(results: list[Result], checkpoint: Path, data: Path, tolerance: float = 1e-4,
                     claimed_by: str = "the result file", fresh: int | str | None = None,
                     progress: bool = True) -> list[Result]:
    """``rescore`` of several results of one model and split under their protocols at once: one load,
    one encoding and at most one fresh draw (``ident3d.evaluation.evaluate_protocols``), so every new
    draw is the same unseen images under each protocol. The results must agree on the split and on the
    draw they reproduce (its n and seed), or carry none, and hold one protocol each; each keeps its own
    model name (a label, not a measurement: a run's two results may name it differently)."""
    from ident3d.evaluation import evaluate_protocols

    documents = [r.document for r in results]
    first = documents[0]
    drawn = first.get("fresh")
    reproduce = (drawn["n"], drawn["seed"]) if drawn else None
    protocols = [d["protocol"] for d in documents]
    for document in documents[1:]:
        other = document.get("fresh")
        if document["dataset"]["split"] != first["dataset"]["split"] or (
                (other["n"], other["seed"]) if other else None) != reproduce:
            raise ResultError(f"{claimed_by}: results of another split or fresh draw cannot be "
                              "re-scored together. Fix: re-score each on its own (leaderboard rescore).")
    if len(set(protocols)) != len(protocols):
        raise ResultError(f"{claimed_by}: two results under one protocol ({', '.join(protocols)}). Fix: "
                          "re-score each on its own (leaderboard rescore).")
    scored = evaluate_protocols(checkpoint, data, protocols, split=first["dataset"]["split"],
                                progress=progress, fresh=reproduce[0] if reproduce else fresh,
                                fresh_seed=reproduce[1] if reproduce else None)
    out = []
    for result in documents:
        again = scored[result["protocol"]].document
        again = Result({**again, "model": {**again["model"], "name": result["model"]["name"]}},
                       "the evaluator's result")
        _compare_shown(result, again.document, checkpoint, data, tolerance, claimed_by)
        out.append(again)
    return out


def _compare_shown(result: dict, document: dict, checkpoint: Path, data: Path, tolerance: float,
                   claimed_by: str) -> None:
    """Raise naming the first number ``result`` shows that re-scoring (``document``) does not give."""
    if track_of(document) != track_of(result):
        raise ResultError(f"field dataset/track: {claimed_by} says {track_of(result)}, but {data} is "
                          f"{track_of(document)}. Fix: re-score on the data the result was made on.")
    again = _shown_numbers(document)
    for path, submitted in _shown_numbers(result).items():
        other = again.get(path)
        differs = other is not None and submitted is not None and abs(other - submitted) > tolerance
        if (submitted is None) != (other is None) or differs:
            raise ResultError(f"field {path}: {claimed_by} says {submitted}, re-scoring "
                              f"{checkpoint} gives {other}. Fix: submit the result of this checkpoint.")


@dataclass(frozen=True)
class Rescored:
    entry: Entry  # the entry again, around the re-scored result (new companion sections, this file's sha256)
    same_file: bool  # the file is the one the entry was scored with


def rescore_entry(entry: Entry, checkpoint: Path, data: Path, progress: bool = True) -> Rescored:
    """Re-score ``checkpoint`` on ``data`` against everything the entry shows (its table metrics, its
    result's per-latent values, and a verified entry's fresh draw re-rendered from its revealed
    seed); raise naming the first value that differs. Equal scores from different bytes happen when a
    model is exported again by another version of torch or of this package; ``same_file`` tells them
    apart. The returned entry holds only what was recomputed; a verified entry's signed record covers
    the result it was verified with, so around the re-scored result it is public-split."""
    shown = Result.parse({**entry["result"], "metrics": entry["metrics"]}, f"entry {entry['id']}")
    again = rescore(shown, checkpoint, data, claimed_by=f"entry {entry['id']}", progress=progress).document
    document = {k: v for k, v in entry.document.items() if k != "verification"}
    document.update(result=again, metrics=again["metrics"], checkpoint_sha256=again["model"]["sha256"])
    if document["status"] == "verified":
        document["status"] = "public-split"
    return Rescored(Entry.parse(document, f"entry {entry['id']} re-scored"),
                    atomic.sha256_file(checkpoint) == entry.get("checkpoint_sha256"))


def same_model(entries: list[Entry], sha256: str, table: tuple[str, str]) -> list[str]:
    """The ids of entries of ``table`` (track, protocol) scored from the model file ``sha256``."""
    return [e["id"] for e in entries if (e["dataset"], e["protocol"]) == table and sha256 in (
        e.get("checkpoint_sha256"), ((e.get("result") or {}).get("model") or {}).get("sha256"))]


# Two entries whose scores agree this closely are one model: half the board's rounding (0.01 points).
SAME_SCORES = 5e-5


def _score_vector(entry: Mapping[str, Any]) -> list[float | None]:
    """The public-split numbers an entry stands on: its metrics' means and, when it has a result,
    each latent's values."""
    keys = per_latent_metrics()
    vector = [entry["metrics"].get(k) for k in keys]
    for row in (entry.get("result") or {}).get("per_latent", []):
        vector += [row.get(k) for k in keys]
    return vector


def same_scores(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two entries of one table report the same scores to within rounding (a re-export of
    one model: renamed parameters, an unused buffer, a scale folded in, all score alike)."""
    va, vb = _score_vector(a), _score_vector(b)
    if len(va) != len(vb) or all(x is None for x in va):
        return False
    return all((x is None) == (y is None) and (x is None or abs(x - y) <= SAME_SCORES)
               for x, y in zip(va, vb, strict=True))


def twin_of(entries: list[Entry], entry: Mapping[str, Any], replace: str | None = None) -> Entry | None:
    """The ranked entry of ``entry``'s table (not itself, not ``replace``) with the same scores."""
    table = (entry["dataset"], entry["protocol"])
    return next((e for e in entries if (e["dataset"], e["protocol"]) == table and not e.get("archived")
                 and e["id"] not in (entry["id"], replace) and same_scores(e, entry)), None)


def twins(entries: list[Entry]) -> list[tuple[Entry, Entry]]:
    """Pairs of ranked entries of one table with the same scores (each pair once)."""
    ranked = [e for e in entries if not e.get("archived")]
    return [(a, b) for i, a in enumerate(ranked) for b in ranked[i + 1:]
            if (a["dataset"], a["protocol"]) == (b["dataset"], b["protocol"]) and same_scores(a, b)]


def write_entry(entry: Entry, directory: Path, replace: str | None = None) -> Path:
    """Write a new entry (as validated when it was made) to ``directory/<protocol>/<ID>.json``; an
    existing ID of that protocol is refused, never overwritten, unless it is ``replace``, the entry of
    the same protocol the caller asked to replace (removed once the new one is written)."""
    entry = entry.document
    path = entry_path(directory, entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    if replace is not None and (replace == entry["id"] or not path.exists()):
        atomic.write_json(path, entry)
        if replace != entry["id"]:
            entry_path(directory, {**entry, "id": replace}).unlink(missing_ok=True)
        return path
    if path.exists():
        raise ResultError(f"field id: {entry['id']!r} already exists at {path}. Fix: choose another "
                          "--id (add a _variant suffix), or delete the old entry on purpose.")
    atomic.write_json(path, entry)
    return path
