"""The evaluation contract, without torch: the result file's schema (its protocol names and metric
keys filled from ``ident3d.protocols``) and validation. The evaluator writes results; the leaderboard
and users' tools read them.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import InitVar, dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from ident3d import atomic, gap_test
from ident3d.errors import ResultError
from ident3d.protocols import METRICS, REGISTRY, Metric, per_latent_metrics

RESULT_SCHEMA = "ident3d-result/1"


@dataclass(frozen=True)
class Result:
    """A result document that passed ``validate_result``: every way of making one validates it, once
    (the evaluator's, ``Result.parse`` at a boundary such as a file or a submission), so code that
    takes a ``Result`` need not check it again. Functions take a ``Result``, never a bare document."""

    document: dict[str, Any]
    source: InitVar[str] = "result"  # what an error names: a file, a submission, "the evaluator"

    def __post_init__(self, source: str) -> None:
        try:
            validate_result(self.document)
        except ResultError as error:
            raise ResultError(f"{source}: {error}") from None

    @classmethod
    def parse(cls, document: Any, source: str = "result") -> Result:
        """Validate once; the error names ``source`` and the first offending field."""
        return cls(document, source)

    @classmethod
    def load(cls, path: Path) -> Result:
        """Read a result file (a regular file of strict JSON) and validate it; errors name the file."""
        from ident3d.readers import read_json

        document = read_json(path, ResultError, "pass the result file written by `ident3d evaluate`")
        return cls(document, str(path))

    @property
    def metrics(self) -> dict[str, float | None]:
        return self.document["metrics"]

    def save(self, path: Path, overwrite: bool = True) -> None:
        """Write the result; without ``overwrite`` (``evaluate --out`` without --overwrite) only where
        no file is at the moment of writing: a file that appeared there since the command checked
        its --out is never replaced."""
        try:
            atomic.write_json(Path(path), self.document, exclusive=not overwrite)
        except FileExistsError:
            from ident3d.outputs import OutputError

            raise OutputError(f"--out {path}: a file appeared there while this command ran (another "
                              "command wrote it); it is kept, and nothing was written. Fix: choose another "
                              "path, or pass --overwrite to replace it.") from None

    def table(self) -> str:
        """A short per-latent table for the terminal, headed by what was scored and how far the
        numbers are the evaluator's own."""
        d = self.document
        model = d["model"]
        who = ("self-reported: features computed outside the sandbox (your own module or an embeddings "
               "file)" if model.get("self_reported") else "scored from the model file in the sandbox")
        cols = per_latent_metrics()
        version = f" {d['protocol_version']}" if d.get("protocol_version") else ""
        lines = [f"{model['name']} on {d['dataset'].get('track') or 'custom data'} ({d['dataset']['split']}, "
                 f"{d['dataset']['n']:,} images) under {d['protocol']}{version}; {who}",
                 f"{'factor':<16}" + "".join(f"{c:>14}" for c in cols)]
        for row in [*self.document["per_latent"], {"factor": "mean", **self.metrics}]:
            cells = "".join(f"{row[c]:>14.4f}" if row.get(c) is not None else f"{'-':>14}"
                            for c in cols)
            lines.append(f"{row['factor']:<16}{cells}")
        for c in self.document.get("classes", []):
            lines.append(f"{c['factor']:<16}class accuracy {c['accuracy']:.4f} (chance {c['chance']:.4f}, "
                         f"{c['n_classes']} classes)")
        return "\n".join([*lines, *self.fresh_lines()])

    def fresh_lines(self) -> list[str]:
        """What the fresh draw says, in words: its scores beside the public split's, and the gap."""
        fresh = self.document.get("fresh")
        if not fresh:
            return []
        regions = fresh.get("regions", [])
        lines = [f"fresh draw: {fresh['n']} test images of {fresh['track']} rendered now"
                 + (f", and {fresh['n']} of each of its {len(regions)} OOD regions" if regions else "")
                 + f" (seed {fresh['seed']}, {fresh['seed_source']})"]
        for where, gap in (("", fresh["gap"]), *((f"{r['split']} ", r["gap"]) for r in regions)):
            for key, g in gap.items():
                low, high = (100 * v for v in g["ci95"])
                lines.append(f"  {where}{key}: public {100 * g['public']:.2f}, fresh {100 * g['fresh']:.2f} "
                             f"(95% {100 * g['fresh_ci95'][0]:.2f} to {100 * g['fresh_ci95'][1]:.2f}); gap "
                             f"{100 * g['gap']:+.2f} [{low:+.2f}, {high:+.2f}]"
                             + (f", one-sided p {g['p']:.3f}" if "p" in g else ""))
        for where, gap in (("", fresh["gap"]), *((f"{r['split']}: ", r["gap"]) for r in regions)):
            lines.append(f"  {where}{gap_verdict(fresh, gap, self.document['protocol'])}")
        return lines

    def destination(self, path: Path) -> str:
        """Where this result can go: the track's leaderboard table, or only comparisons (custom data)."""
        track = self.document["dataset"]["track"]
        if track.startswith("custom:"):
            return (f"data: {track}, not a track's split, so no leaderboard table takes this result; "
                    "`ident3d leaderboard compare` still places it (tracks: `ident3d tracks`)")
        return (f"track: {track}; enter it in that table with `ident3d leaderboard add {path} --id "
                "<Author><Year><FirstWord>`")


def gap_verdict(fresh: Mapping[str, Any], gap: dict[str, dict[str, Any]], protocol: str) -> str:
    """The sentence of one of a fresh section's gaps: the memorisation test's verdict
    (``ident3d.gap_test``), or for a result judged before it the old rule's (a bootstrap interval of
    either metric wholly above 0), said to be that. The gap cannot see a model that recognises public
    images and answers them at its fresh level, which is why ranks use the fresh score."""
    if "test" in fresh:
        return gap_test.verdict(gap, protocol)
    above = [key for key, g in gap.items() if g["ci95"][0] > 0]
    old = "old test, before its false-alarm rate was held: docs/submissions.md"
    if above:
        return (f"flagged ({', '.join(above)}: interval above 0; {old}): the model may have memorised it; "
                "a warning only, the rank uses the fresh score")
    return f"not flagged ({old}); the rank uses the fresh score"


def shipped_schema(package: str, name: str) -> dict[str, Any]:
    """A shipped schema as validation uses it: its registry-owned definitions filled from
    ``ident3d.protocols`` (``registry_defs``), so no schema file spells a protocol or a metric."""
    schema = json.loads(files(package).joinpath(name).read_text())
    filled = registry_defs(tuple(REGISTRY), tuple(METRICS.values()))
    schema["$defs"].update({key: filled[key] for key in schema["$defs"] if key in filled})
    return schema


def schema_validator(package: str, name: str) -> Any:
    """The validator of a shipped schema: one per schema and state of the registry."""
    return _validator(package, name, tuple(REGISTRY), tuple(METRICS.values()))


@functools.cache
def _validator(package: str, name: str, protocols: tuple[str, ...], metrics: tuple[Metric, ...]) -> Any:
    """One validator per shipped schema, kept: ``jsonschema.validate`` re-checks the schema itself on
    every call, which cost 20 times the validation (about 10 s to load every entry)."""
    import jsonschema

    schema = shipped_schema(package, name)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def registry_defs(protocols: tuple[str, ...], metrics: tuple[Metric, ...]) -> dict[str, dict[str, Any]]:
    """The schemas' definitions that the protocol registry owns, so no schema spells a protocol or a
    metric: ``protocol`` (a registered name), a result's ``metrics`` and ``latent_row`` (every per-latent
    metric; the required ones must be numbers) and an entry's ``entry_metrics`` and ``metrics_std`` (a
    paper's entry may lack any number but those every paper reports)."""
    unit = {"type": "number", "minimum": 0, "maximum": 1}
    unit_or_null = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
    per_latent = [m for m in metrics if m.per_latent]
    required = [m.name for m in per_latent if m.required]

    def values(number: Callable[[Metric], bool]) -> dict[str, Any]:
        return {m.name: unit if number(m) else unit_or_null for m in per_latent}

    return {
        "protocol": {"enum": list(protocols)},
        "metrics": {"type": "object", "required": required, "properties": values(lambda m: m.required)},
        "latent_row": {"type": "object", "required": ["factor", *required],
                       "properties": {"factor": {"type": "string"}, **values(lambda m: m.required)}},
        "entry_metrics": {"type": "object", "additionalProperties": False, "required": required,
                          "properties": values(lambda m: m.paper_reports)},
        "metrics_std": {"type": "object", "additionalProperties": False,
                        "properties": values(lambda m: False)},
    }


def schema_error(document: Any, package: str, name: str) -> Any:
    """The error ``jsonschema.validate`` would raise for ``document`` (its best match), or None."""
    import jsonschema

    return jsonschema.exceptions.best_match(schema_validator(package, name).iter_errors(document))


def schema_problem(error: Any) -> str:
    """``field WHERE: WHAT`` of a jsonschema ValidationError; a failed pattern is described in words
    (the schema's description) instead of the regular expression."""
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    described = error.schema.get("description") if isinstance(error.schema, dict) else None
    if error.validator == "pattern" and described:
        return f"field {where}: {error.instance!r} is not of the form {described}"
    return f"field {where}: {error.message}"


def validate_result(document: dict[str, Any]) -> None:
    error = schema_error(document, "ident3d.schemas", "result-v1.json")
    if error is not None:
        raise ResultError(f"result {schema_problem(error)}")
    where = non_finite_field(document)
    if where is not None:
        raise ResultError(f"result field {where}: NaN or infinity; every number must be finite.")


def non_finite_field(document: Any, where: str = "") -> str | None:
    """Path of the first NaN or infinite number (JSON Schema lets NaN pass every bound)."""
    if isinstance(document, float) and not math.isfinite(document):
        return where or "(top level)"
    items = (document.items() if isinstance(document, dict) else
             enumerate(document) if isinstance(document, list) else ())
    for key, value in items:
        found = non_finite_field(value, f"{where}/{key}" if where else str(key))
        if found is not None:
            return found
    return None
