"""The dataset card of a variant, generated from its spec: the factor table, the causal model, files."""

from __future__ import annotations

from ident3d.scene import get_mapping
from ident3d.variants import Factor, Variant, get_variant


def _raw_range(factor: Factor) -> str:
    if factor.is_class:
        return f"classes 0..{len(factor.classes) - 1}"
    return f"[{factor.low:g}, {factor.high:g}]"


def dataset_card(variant: str | Variant = "v2") -> str:
    """Markdown: one row per latent (raw range, scene quantity, formula, unit), the DAG if any."""
    v = get_variant(variant)
    roots = "Every raw latent u is drawn uniformly from its range" if not v.edges else (
        "Root latents are drawn uniformly from their ranges (classes equally likely); the others "
        "follow the causal model below")
    lines = [
        f"Variant `{v.name}` ({v.title}): {v.summary}. {roots}.",
        "",
        "| idx | factor | group | raw range | scene quantity | mapping from u | unit |",
        "|---:|---|---|---|---|---|---|",
    ]
    for factor, formula in zip(v.factors, v.formulas(), strict=True):
        lines.append(f"| {factor.index} | `{factor.name}` | {factor.group} | {_raw_range(factor)} "
                     f"| {factor.scene_quantity} | {formula} | {factor.unit} |")
    if v.edges:
        lines += ["", "Causal model (a DAG; each child is a truncated normal around a mean set by its "
                  "parents):", "", "| child | parents | mechanism |", "|---|---|---|"]
        for f in v.factors:
            if f.mechanism:
                lines.append(f"| `{f.name}` | {', '.join(f'`{p}`' for p in f.mechanism.parents)} "
                             f"| {f.mechanism.formula()} |")
        lines += ["", "Edges: " + ", ".join(f"{p} -> {c}" for p, c in v.edges) + ". No other latent "
                  "depends on another."]
    wraps = ("wrapped to [0, 1)" if get_mapping(v.colour).wraps_hue
             else "not wrapped, as in the published archives")
    lines += [
        "",
        f"Files of a split: `raw_latents.npy` holds u (N x {v.n_latents}, float32; continuous latents in "
        "[-1, 1], class latents as class numbers), the values that loaders, positive pairs and the "
        "evaluator use; `latents.npy` holds the scene quantities of the column \"mapping from u\" "
        f"(positions in scene units, angles in radians, hues in turns, {wraps}); `captions.txt` one "
        "templated description per image; `images/` the PNGs, `manifest.json` how they were made "
        "(variant, render settings, seeds, checksums, image statistics), and `images.npy` the packed "
        "uint8 images after `ident3d pack`.",
    ]
    return "\n".join(lines)

