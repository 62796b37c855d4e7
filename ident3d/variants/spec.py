"""Reading variant specs: built-in names or TOML files (with ``extends``), every key validated and
named in its error, the causal graph checked to be a DAG, and a split's variant from its manifest."""

from __future__ import annotations

import graphlib
import json
import math
import re
import tomllib
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from ident3d.errors import did_you_mean
from ident3d.scene import QUANTITIES, SHAPES, get_mapping
from ident3d.variants.model import Factor, Mechanism, Variant, VariantError

FROZEN = ("v2", "legacy")  # the tracks' variants: their specs never change
DEFAULT_VARIANT = "v2"
_NUMBER = r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_SCALE_TEXT = re.compile(rf"^\s*(?:({_NUMBER})\s*\*?\s*)?(pi)?\s*(?:/\s*({_NUMBER}))?\s*$")
_SPEC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # also a file and folder name: no paths
_SPEC_KEYS = {"extends", "name", "title", "summary", "colour", "latents"}
_LATENT_KEYS = {"name", "group", "drives", "scale", "offset", "description", "classes", "mechanism"}
_MECHANISM_KEYS = {"bias", "weights", "means", "noise"}


def parse_scale(value: Any, where: str) -> tuple[float, str]:
    """A scale as a number or a text like ``pi/2``, ``1/4`` or ``2 pi``: (value, text as written)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise VariantError(f"{where}: scale must be a number or a text like 'pi/2', got {value!r}")
    if isinstance(value, str):
        match = _SCALE_TEXT.match(value)
        if not match or not any(match.groups()):
            raise VariantError(f"{where}: scale {value!r} is not a number, 'pi', 'N pi', 'pi/N' or 'A/B'")
        factor, pi, divisor = match.groups()
        number = (float(factor) if factor else 1.0) * (math.pi if pi else 1.0)
        number = number / float(divisor) if divisor else number
        text = value.strip().replace(" ", "")
    else:  # the shortest text that reads back as the same number ("0.1", "1e-05")
        number = float(value)
        text = f"{number:g}" if float(f"{number:g}") == number else repr(number)
    if not (math.isfinite(number) and number != 0):
        raise VariantError(f"{where}: scale must be finite and non-zero, got {value!r}")
    return number, text


# --- reading specs ---------------------------------------------------------------------------------
def builtin_names() -> list[str]:
    specs = files("ident3d.variants").iterdir()
    return sorted(p.name.removesuffix(".toml") for p in specs if p.name.endswith(".toml"))


def _read_toml(name_or_path: str | Path) -> tuple[dict[str, Any], str]:
    path = Path(name_or_path)
    if str(name_or_path) in builtin_names():
        text, source = (files("ident3d.variants") / f"{name_or_path}.toml").read_text(), "built-in"
    elif path.suffix == ".toml" and path.is_file():
        if path.stat().st_size > 1_000_000:
            raise VariantError(f"{path}: a variant spec over 1 MB is not a spec. Fix: pass the right file.")
        text, source = path.read_text(encoding="utf-8", errors="replace"), str(path)
    else:
        raise VariantError(f"unknown variant {str(name_or_path)!r}: expected one of "
                           f"{', '.join(builtin_names())} or a .toml spec file that exists."
                           f"{did_you_mean(str(name_or_path), builtin_names())} "
                           "Fix: check the name, or write a spec (docs/variants.md).")
    try:
        return tomllib.loads(text), source
    except tomllib.TOMLDecodeError as error:
        raise VariantError(f"{source}: not valid TOML ({error}). Fix: correct the file.") from None


def _resolve(name_or_path: str | Path, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], str]:
    """The spec with ``extends`` applied: top-level keys override, a latent with a base latent's name
    overrides that latent's keys, new latents are appended."""
    spec, source = _read_toml(name_or_path)
    unknown = set(spec) - _SPEC_KEYS
    if unknown:  # the keys of a file the user named are echoed, never those of a base it extends
        listed = f"unknown key(s) {', '.join(sorted(unknown))}" if not seen else "unknown keys"
        raise VariantError(f"{source}: {listed}; a spec has {', '.join(sorted(_SPEC_KEYS))}")
    if "extends" not in spec:
        return spec, source
    base_name = spec.pop("extends")
    if not isinstance(base_name, str) or base_name in seen or len(seen) > 8:
        raise VariantError(f"{source}: extends {base_name!r} is not a variant name, or makes a cycle")
    if base_name not in builtin_names():  # a user's base is a .toml file beside the spec, nowhere else
        if source == "built-in" or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.toml", base_name):
            raise VariantError(f"{source}: extends {base_name[:80]!r}: expected a built-in variant "
                               f"({', '.join(builtin_names())}) or the file name of a spec beside this one")
        base_name = str(Path(source).parent / base_name)
    base, _ = _resolve(base_name, (*seen, str(name_or_path)))
    latents = list(base.get("latents", []))
    for latent in spec.pop("latents", []):
        names = [b.get("name") for b in latents]
        if isinstance(latent, dict) and latent.get("name") in names:
            i = names.index(latent["name"])
            latents[i] = {**latents[i], **latent}
        else:
            latents.append(latent)
    return {**base, **spec, "latents": latents}, source


def _text(table: dict, key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise VariantError(f"{where}: '{key}' must be a non-empty text, got {value!r}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise VariantError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def _mechanism(table: Any, where: str) -> Mechanism:
    if not isinstance(table, dict) or set(table) - _MECHANISM_KEYS or "noise" not in table:
        raise VariantError(f"{where}: a mechanism is a table with 'noise' and any of bias, weights, "
                           f"means; got {table!r}")
    noise = _number(table["noise"], f"{where}.noise")
    if noise <= 0:
        raise VariantError(f"{where}.noise: must be > 0, got {noise}")
    weights, means = table.get("weights", {}), table.get("means", {})
    if not isinstance(weights, dict) or not isinstance(means, dict) or not (weights or means):
        raise VariantError(f"{where}: 'weights' (parent = coefficient) and 'means' (class parent = "
                           "[mean per class]) must be tables, and at least one parent is needed")
    return Mechanism(
        noise=noise, bias=_number(table.get("bias", 0.0), f"{where}.bias"),
        weights={p: _number(w, f"{where}.weights.{p}") for p, w in weights.items()},
        means={p: tuple(_number(v, f"{where}.means.{p}") for v in (m if isinstance(m, list) else [m]))
               for p, m in means.items()})


def _factor(index: int, table: Any, source: str) -> Factor:
    where = f"{source}: latents[{index}]"
    if not isinstance(table, dict):
        raise VariantError(f"{where}: expected a table, got {table!r}")
    unknown = set(table) - _LATENT_KEYS
    if unknown:
        raise VariantError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; a latent has "
                           f"{', '.join(sorted(_LATENT_KEYS))}")
    name = _text(table, "name", where)
    where = f"{source}: latent {name!r}"
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise VariantError(f"{where}: a latent name is lower-case letters, digits and '_'")
    drives = _text(table, "drives", where)
    if drives not in QUANTITIES:
        raise VariantError(f"{where}: drives {drives!r}; expected one of {', '.join(QUANTITIES)}")
    classes: tuple[str, ...] = ()
    if QUANTITIES[drives].unit == "class":
        raw = table.get("classes")
        if not (isinstance(raw, list) and 2 <= len(raw) and all(c in SHAPES for c in raw)
                and len(set(raw)) == len(raw)):
            raise VariantError(f"{where}: 'classes' must list two or more distinct shapes of "
                               f"{', '.join(SHAPES)}; got {raw!r}")
        classes = tuple(raw)
        if "scale" in table or "offset" in table:
            raise VariantError(f"{where}: a class latent has no scale or offset")
    elif "classes" in table:
        raise VariantError(f"{where}: 'classes' only for a latent that drives object_class")
    scale, scale_text = parse_scale(table.get("scale", 1), f"{where}.scale") if not classes else (1.0, "1")
    mechanism = _mechanism(table["mechanism"], f"{where}.mechanism") if "mechanism" in table else None
    if mechanism and classes:
        raise VariantError(f"{where}: a class latent is a root of the DAG (no mechanism)")
    return Factor(index, name, _text(table, "group", where, "other"), drives,
                  _text(table, "description", where, QUANTITIES[drives].label), scale, scale_text,
                  0.0 if classes else _number(table.get("offset", 0.0), f"{where}.offset"),
                  classes, mechanism)


def _check_graph(factors: tuple[Factor, ...], source: str) -> None:
    by_name = {f.name: f for f in factors}
    if len(by_name) != len(factors):
        raise VariantError(f"{source}: two latents share a name")
    driven = [f.drives for f in factors]
    twice = sorted({d for d in driven if driven.count(d) > 1})
    if twice:
        raise VariantError(f"{source}: {', '.join(twice)} driven by more than one latent")
    for f in factors:
        if not f.mechanism:
            continue
        for parent in f.mechanism.parents:
            if parent not in by_name or parent == f.name:
                raise VariantError(f"{source}: latent {f.name!r}: parent {parent!r} is not another latent")
        for parent in f.mechanism.weights:
            if by_name[parent].is_class:
                raise VariantError(f"{source}: latent {f.name!r}: class parent {parent!r} goes in "
                                   "'means' (one mean per class), not 'weights'")
        for parent, means in f.mechanism.means.items():
            k = len(by_name[parent].classes)
            if not by_name[parent].is_class or len(means) != k:
                raise VariantError(f"{source}: latent {f.name!r}: means.{parent} must be a class latent's "
                                   f"{k or 'class'} means, one per class")
    graph = {f.name: set(f.mechanism.parents) if f.mechanism else set() for f in factors}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        raise VariantError(f"{source}: the mechanisms form a cycle ({' -> '.join(error.args[1])}); "
                           "a causal model must be a DAG") from None


@cache
def _load(name_or_path: str) -> Variant:
    spec, source = _resolve(name_or_path)
    if source != "built-in" and spec.get("name") in builtin_names():
        raise VariantError(f"{source}: name {spec['name']!r} is a built-in variant's; a spec of your own "
                           "needs a name of its own (set `name`). Fix: rename it, or use the built-in.")
    variant = variant_from_dict(spec, source)
    if variant_from_dict(json.loads(json.dumps(variant.to_dict())), source) != variant:  # as a manifest
        raise VariantError(f"{source}: the spec does not read back as written (please report it)")
    return variant


def variant_from_dict(spec: dict[str, Any], source: str) -> Variant:
    """A Variant from a resolved spec (a TOML file's tables, or a manifest's ``variant_spec``)."""
    if not isinstance(spec, dict):
        raise VariantError(f"{source}: a variant spec is a table, got {type(spec).__name__}")
    latents = spec.get("latents")
    if not isinstance(latents, list) or not latents:
        raise VariantError(f"{source}: 'latents' must be a non-empty list of [[latents]] tables")
    factors = tuple(_factor(i, t, source) for i, t in enumerate(latents))
    _check_graph(factors, source)
    colour = _text(spec, "colour", source, "v2")
    get_mapping(colour)
    name = _text(spec, "name", source)
    if not _SPEC_NAME.fullmatch(name):
        raise VariantError(f"{source}: name {name[:80]!r} must be letters, digits, '-' and '_' (at most 64, "
                           "starting with a letter or digit): it names files and folders")
    return Variant(name, _text(spec, "title", source, spec.get("name")),
                   _text(spec, "summary", source, "a 3DIdent variant"), colour, factors, source)


def get_variant(variant: str | Path | Variant) -> Variant:
    """A built-in variant by name, a spec file by path, or a Variant as is."""
    if isinstance(variant, Variant):
        return variant
    path = Path(variant)
    return _load(str(path.resolve()) if path.suffix == ".toml" else str(variant))


def split_variant(manifest: dict[str, Any] | None) -> Variant:
    """The variant a split was rendered with: its manifest's spec, else the built-in of that name;
    a split without manifest (the published layout) is ``legacy``."""
    if manifest is None:
        return get_variant("legacy")
    if "variant_spec" in manifest:
        return variant_from_dict(manifest["variant_spec"], "manifest.json variant_spec")
    name = manifest.get("variant", DEFAULT_VARIANT)
    if name not in builtin_names():  # never a path: a manifest must not make us read other files
        raise VariantError(f"manifest.json: variant {name!r} is not built in and the manifest holds no "
                           "variant_spec. Fix: restore the manifest, or re-create the split.")
    return get_variant(name)


def manifest_fields(variant: Variant) -> dict[str, Any]:
    """What a manifest records about its variant: the name, and the whole spec unless frozen."""
    return {"variant": variant.name, **({} if variant.name in FROZEN and variant.source == "built-in"
                                        else {"variant_spec": variant.to_dict()})}
