"""The bundle's Hugging Face dataset card: ``README.md`` with the YAML header the Hub reads (licence,
pretty name, task categories, size category, one ``configs`` entry with ``data_files`` per split,
the features) and the prose of the card, all from the bundle's facts."""

from __future__ import annotations

from typing import Any

from ident3d.card import dataset_card
from ident3d.publish.facts import CITATION, BundleFacts
from ident3d.yaml_block import yaml_lines

SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                   (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"))


def size_category(n: int) -> str:
    return next((name for limit, name in SIZE_CATEGORIES if n < limit), "n>10M")


def features(facts: BundleFacts) -> list[dict[str, Any]]:
    """The features as ``datasets`` writes them in a card (``Features._to_yaml_list``)."""
    k = facts.variant.n_latents
    out: list[dict[str, Any]] = [
        {"name": "image", "dtype": "image"}, {"name": "index", "dtype": "int64"},
        {"name": "caption", "dtype": "string"}, {"name": "raw_latents", "list": "float32", "length": k},
        {"name": "latents", "list": "float32", "length": k}]
    for f in facts.variant.factors:
        out.append({"name": f.name, "dtype": {"class_label": {"names": {str(i): c for i, c in
                                                                        enumerate(f.classes)}}}}
                   if f.is_class else {"name": f.name, "dtype": "float32"})
    return out


def header(facts: BundleFacts) -> dict[str, Any]:
    return {
        "license": (facts.license or "unknown").lower(),
        "pretty_name": facts.title,
        "task_categories": ["image-feature-extraction"],
        "tags": ["identifiability", "disentanglement", "self-supervised-learning", "3DIdent", "synthetic",
                 "croissant"],
        "size_categories": [size_category(facts.n_images)],
        "configs": [{"config_name": "default", "data_files": [
            {"split": s.name, "path": f"data/{s.name}-*.parquet"} for s in facts.splits]}],
        "dataset_info": {"features": features(facts), "splits": [
            {"name": s.name, "num_bytes": sum(x.n_bytes for x in s.shards), "num_examples": s.n}
            for s in facts.splits]},
    }


def hub_card(facts: BundleFacts) -> str:
    """The whole ``README.md`` of the bundle."""
    split_rows = [f"| `{s.name}` | {s.n:,} | {len(s.shards)} | {sum(x.n_bytes for x in s.shards):,} B "
                  f"| `{s.latents_sha256[:16]}...` |" for s in facts.splits]
    lines = [
        "---", *yaml_lines(header(facts)), "---", "",
        f"# {facts.title}", "",
        f"`{facts.name}`: {facts.description}", "",
        "Published by `ident3d publish` with its Croissant 1.1 metadata (`croissant.json`) and its "
        "datasheet (`DATASHEET.md`), all generated from the same facts.", "",
        "## Load it", "",
        "```python",
        "from datasets import load_dataset",
        "",
        'bundle = load_dataset("path/to/this/folder")  # or the Hub id it was uploaded to',
        f'record = bundle["{facts.splits[0].name}"][0]  # image, index, caption, raw_latents, latents, one '
        "column per factor",
        "```", "",
        "With ident3d: `ident3d import --from data --split NAME --data ROOT` rebuilds the split folder "
        "(images, latents, captions, manifest), checking every image against the manifest's sha256.", "",
        "## Splits", "",
        "| split | images | shards | bytes | sha256 of the raw latents |", "|---|---:|---:|---:|---|",
        *split_rows, "",
        "## Factors", "",
        dataset_card(facts.variant), "",
        "## How it was made", "",
        f"Renderer: {facts.renderer}. Resolution {facts.resolution} x {facts.resolution} px"
        + (". Render settings: " + ", ".join(f"{k} = {v}" for k, v in facts.render.items())
           if facts.render else "") + ".", "",
        "## Known limitations", "",
        *[f"- {item}" for item in facts.limitations], "",
        "## Licence", "",
        facts.license_text + ".", "",
        "## Citation", "",
        "```bibtex", CITATION, "```", "",
    ]
    return "\n".join(lines)
