"""Variants as data: a TOML spec lists the latents, what each drives in the scene, and optionally object
classes and a causal model among the latents (docs/variants.md).

A continuous latent u is uniform on [-1, 1] unless it has a mechanism, and drives its scene quantity
as ``scale * u + offset``. A class latent stores the class index (0, 1, ...) as its raw value and
selects the object shape. A mechanism makes a latent a child in a DAG: its raw value is drawn from
a normal around ``bias + sum(weights[p] * u_p) + means[c][class of c]``, truncated to [-1, 1]
(additive noise, exact truncation through the inverse CDF). ``v2`` and ``legacy`` are frozen: the
benchmark tracks rest on them, so their files never change; a new scene is a new file.
"""

from __future__ import annotations

import graphlib
import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from ident3d.errors import LatentError
from ident3d.latents import (
    PAIR_STREAM,
    RAW_HIGH,
    RAW_LOW,
    broadcast_scale,
    conditional_from_uniform,
    sample_conditional,
)
from ident3d.readers import is_real_numeric
from ident3d.scene import QUANTITIES, SHAPES, SceneParams, get_mapping, params_from_quantities

FROZEN = ("v2", "legacy")  # the tracks' variants: their specs never change
DEFAULT_VARIANT = "v2"
STYLE_STREAM = 3  # second key of the style latents' stream in content/style pairs
_NUMBER = r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_SCALE_TEXT = re.compile(rf"^\s*(?:({_NUMBER})\s*\*?\s*)?(pi)?\s*(?:/\s*({_NUMBER}))?\s*$")
_SPEC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # also a file and folder name: no paths
_SPEC_KEYS = {"extends", "name", "title", "summary", "colour", "latents"}
_LATENT_KEYS = {"name", "group", "drives", "scale", "offset", "description", "classes", "mechanism"}
_MECHANISM_KEYS = {"bias", "weights", "means", "noise"}


class VariantError(LatentError):
    """A variant spec that cannot be used, with the file and key named."""


@dataclass(frozen=True)
class Mechanism:
    """A child latent's structural equation: truncated normal around a mean set by its parents."""

    noise: float
    bias: float = 0.0
    weights: dict[str, float] = field(default_factory=dict)  # continuous parent -> coefficient
    means: dict[str, tuple[float, ...]] = field(default_factory=dict)  # class parent -> mean per class

    @property
    def parents(self) -> tuple[str, ...]:
        return (*self.weights, *self.means)

    def formula(self) -> str:
        terms = [f"{self.bias:g}"] if self.bias else []
        terms += [f"{w:g} {p}" for p, w in self.weights.items()]
        terms += [f"m_{p}[{p}]" for p in self.means]
        means = "".join(f"; m_{p} = ({', '.join(f'{v:g}' for v in m)})" for p, m in self.means.items())
        return f"N({' + '.join(terms) or '0'}, {self.noise:g}^2) truncated to [-1, 1]{means}"


@dataclass(frozen=True)
class Factor:
    """One latent of a variant: where it sits in the raw vector and what it controls in the scene."""

    index: int
    name: str
    group: str
    drives: str  # a key of ident3d.scene.QUANTITIES
    description: str
    scale: float = 1.0
    scale_text: str = "1"
    offset: float = 0.0
    classes: tuple[str, ...] = ()  # non-empty: a discrete latent with these classes
    mechanism: Mechanism | None = None

    @property
    def is_class(self) -> bool:
        return bool(self.classes)

    @property
    def scene_quantity(self) -> str:
        return QUANTITIES[self.drives].label

    @property
    def unit(self) -> str:
        return QUANTITIES[self.drives].unit

    @property
    def low(self) -> float:
        return 0.0 if self.is_class else RAW_LOW

    @property
    def high(self) -> float:
        return float(len(self.classes) - 1) if self.is_class else RAW_HIGH


@dataclass(frozen=True)
class Variant:
    name: str
    title: str
    summary: str
    colour: str  # a key of ident3d.scene.MAPPINGS
    factors: tuple[Factor, ...]
    source: str  # "built-in" or the file it was read from

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.factors)

    @property
    def n_latents(self) -> int:
        return len(self.factors)

    @property
    def class_columns(self) -> list[int]:
        return [f.index for f in self.factors if f.is_class]

    @property
    def continuous_columns(self) -> list[int]:
        return [f.index for f in self.factors if not f.is_class]

    @property
    def edges(self) -> list[tuple[str, str]]:
        """The causal DAG as (parent, child) pairs, in factor order."""
        return [(p, f.name) for f in self.factors if f.mechanism for p in f.mechanism.parents]

    def to_dict(self) -> dict[str, Any]:
        """The resolved spec (no ``extends``), as stored in a split's manifest."""
        latents = []
        for f in self.factors:
            row: dict[str, Any] = {"name": f.name, "group": f.group, "drives": f.drives,
                                   "description": f.description}
            if f.is_class:
                row["classes"] = list(f.classes)
            else:
                row.update(scale=f.scale_text, offset=f.offset)
            if f.mechanism:
                row["mechanism"] = {k: v for k, v in asdict(f.mechanism).items() if v}
            latents.append(row)
        return {"name": self.name, "title": self.title, "summary": self.summary, "colour": self.colour,
                "latents": latents}

    # --- latents -------------------------------------------------------------------------------
    def check_raw(self, z: np.ndarray, what: str = "raw latents", atol: float = 1e-6) -> np.ndarray:
        """``z`` as float64 (N, k), or LatentError naming the first bad row and column."""
        z = np.asarray(z)
        k = self.n_latents
        if z.ndim != 2 or z.shape[1] != k:
            raise LatentError(f"{what}: expected an array of shape (N, {k}) for variant {self.name!r}, "
                              f"got shape {z.shape}. Fix: pass one row of {k} raw latents per image.")
        if not is_real_numeric(z):
            raise LatentError(f"{what}: expected real numbers, got dtype {z.dtype}. "
                              "Fix: save a float array (complex, bool and text are refused).")
        z = z.astype(np.float64, copy=False)
        low = np.array([f.low for f in self.factors]) - atol
        high = np.array([f.high for f in self.factors]) + atol
        bad = ~np.isfinite(z) | (z < low) | (z > high)
        classes = self.class_columns
        bad[:, classes] |= np.isfinite(z[:, classes]) & (z[:, classes] != np.round(z[:, classes]))
        if bad.any():
            row, col = np.argwhere(bad)[0]
            f = self.factors[col]
            expected = (f"a class index 0 .. {len(f.classes) - 1}" if f.is_class
                        else f"a finite value in [{RAW_LOW}, {RAW_HIGH}]")
            raise LatentError(f"{what}: row {row}, column {col} ({f.name}) is {z[row, col]!r}; expected "
                              f"{expected}. Fix: continuous raw latents live in [-1, 1]; class latents "
                              "hold the class number.")
        return np.clip(z, low + atol, high - atol)

    def sample(self, n: int, seed: int | list[int]) -> np.ndarray:
        """``n`` raw latent vectors (float32): roots uniform (classes equally likely), children from
        their mechanisms in causal order. One uniform draw per value, so a variant without classes
        or mechanisms gives exactly ``sample_uniform(n, seed)``."""
        if n < 0:
            raise LatentError(f"number of samples must be >= 0, got {n}")
        u = np.random.default_rng(seed).uniform(RAW_LOW, RAW_HIGH, size=(n, self.n_latents))
        u = u.astype(np.float32).astype(np.float64)
        z = u.copy()
        for f in self.factors:
            if f.is_class:
                k = len(f.classes)
                z[:, f.index] = np.minimum(np.floor((u[:, f.index] + 1) / 2 * k), k - 1)
        for f in self._causal_order():
            mean = self._mechanism_mean(f, z)
            z[:, f.index] = conditional_from_uniform(mean, (u[:, f.index] + 1) / 2, "normal",
                                                     f.mechanism.noise)
        return z.astype(np.float32)

    def _causal_order(self) -> list[Factor]:
        by_name = {f.name: f for f in self.factors}
        graph = {f.name: set(f.mechanism.parents) if f.mechanism else set() for f in self.factors}
        return [by_name[name] for name in graphlib.TopologicalSorter(graph).static_order()
                if by_name[name].mechanism]

    def _mechanism_mean(self, f: Factor, z: np.ndarray) -> np.ndarray:
        index = {g.name: g.index for g in self.factors}
        m = f.mechanism
        mean = np.full(len(z), m.bias)
        for parent, weight in m.weights.items():
            mean += weight * z[:, index[parent]]
        for parent, means in m.means.items():
            mean += np.asarray(means)[z[:, index[parent]].astype(int)]
        return mean

    def sample_pairs(self, n: int, seed: int, kind: str = "normal", scale: float | np.ndarray = 0.1,
                     beta: float | None = None, style: tuple[str, ...] | list[str] = ()) -> np.ndarray:
        """``n`` exact positive pairs as ``(2n, k)`` rows: anchor ``i`` at row ``2i`` (``sample(n, seed)``),
        its positive at ``2i + 1``: continuous latents from the truncated conditional around the
        anchor, class latents kept (the object is content).

        With ``style`` names, a content/style pair instead (von Kügelgen et al., NeurIPS 2021): the
        style latents are drawn afresh from their marginal (``sample`` with its own stream), every
        other latent is shared exactly."""
        anchors = self.sample(n, seed)
        positives = anchors.astype(np.float64)
        if style:
            unknown = [name for name in style if name not in self.names]
            if unknown or len(set(style)) == self.n_latents:
                raise VariantError(f"style latents {unknown or list(style)}: expected some, not all, of "
                                   f"{', '.join(self.names)}")
            columns = [self.names.index(name) for name in style]
            positives[:, columns] = self.sample(n, [seed, STYLE_STREAM])[:, columns]
        else:
            scale = broadcast_scale(scale, self.n_latents)
            cont = self.continuous_columns
            rng = np.random.default_rng([seed, PAIR_STREAM])
            positives[:, cont] = sample_conditional(anchors[:, cont], rng, kind, scale[cont], beta)
        rows = np.empty((2 * n, self.n_latents), dtype=np.float32)
        rows[0::2], rows[1::2] = anchors, positives
        return rows

    # --- scene -------------------------------------------------------------------------------
    def scene_values(self, raw: np.ndarray) -> np.ndarray:
        """(N, k) float64 scene quantities: ``scale * u + offset``, hues in turns (wrapped when the
        colour mapping wraps them), class indices as they are."""
        z = self.check_raw(raw)
        scale = np.array([1.0 if f.is_class else f.scale for f in self.factors])
        offset = np.array([0.0 if f.is_class else f.offset for f in self.factors])
        out = z * scale + offset
        if get_mapping(self.colour).wraps_hue:
            hues = [f.index for f in self.factors if QUANTITIES[f.drives].unit == "turns"]
            out[:, hues] = np.mod(out[:, hues], 1.0)
        return out

    def scene_params(self, raw: np.ndarray) -> SceneParams:
        values = self.scene_values(raw)
        by_quantity = {f.drives: values[:, f.index] for f in self.factors if not f.is_class}
        shape = None
        for f in self.factors:
            if f.is_class:
                shape = np.array(f.classes, dtype=object)[values[:, f.index].astype(int)]
        return params_from_quantities(by_quantity, len(values), get_mapping(self.colour), shape)

    def scene_latents(self, raw: np.ndarray) -> np.ndarray:
        """What ``latents.npy`` stores: the scene values (float32)."""
        return self.scene_values(raw).astype(np.float32)

    def formulas(self) -> tuple[str, ...]:
        """Human-readable mapping from raw latent u to the scene, per factor (for the card)."""
        m = get_mapping(self.colour)
        out = []
        for f in self.factors:
            q = QUANTITIES[f.drives]
            if f.is_class:
                text = f"class index -> shape: {', '.join(f'{i} {c}' for i, c in enumerate(f.classes))}"
            elif q.unit == "turns":
                text = m.hue_formula.format(s=q.saturation).replace("u/4", _affine_text("u", f))
            else:
                text = f"{q.symbol} = {_affine_text('u', f)}" + (f"; {q.note}" if q.note else "")
            out.append(text)
        return tuple(out)


def _affine_text(u: str, f: Factor) -> str:
    scale = f.scale_text if f.scale_text.replace(".", "").isdigit() else f"({f.scale_text})"
    text = f"{scale}{u}" if f.scale_text != "1/4" else f"{u}/4"
    return text + (f" + {f.offset:.4f}" if f.offset else "")


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
    return sorted(p.name.removesuffix(".toml") for p in files(__name__).iterdir() if p.name.endswith(".toml"))


def _read_toml(name_or_path: str | Path) -> tuple[dict[str, Any], str]:
    path = Path(name_or_path)
    if str(name_or_path) in builtin_names():
        text, source = (files(__name__) / f"{name_or_path}.toml").read_text(), "built-in"
    elif path.suffix == ".toml" and path.is_file():
        if path.stat().st_size > 1_000_000:
            raise VariantError(f"{path}: a variant spec over 1 MB is not a spec. Fix: pass the right file.")
        text, source = path.read_text(encoding="utf-8", errors="replace"), str(path)
    else:
        raise VariantError(f"unknown variant {str(name_or_path)!r}: expected one of "
                           f"{', '.join(builtin_names())} or a .toml spec file that exists. "
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


def scene_params(raw: np.ndarray, variant: str | Variant = DEFAULT_VARIANT) -> SceneParams:
    """Map raw latents to scene parameters with the named (or given) variant."""
    return get_variant(variant).scene_params(raw)


def scene_latents(raw: np.ndarray, variant: str | Variant = DEFAULT_VARIANT) -> np.ndarray:
    return get_variant(variant).scene_latents(raw)


FACTORS: tuple[Factor, ...] = get_variant(DEFAULT_VARIANT).factors
FACTOR_NAMES: tuple[str, ...] = get_variant(DEFAULT_VARIANT).names
