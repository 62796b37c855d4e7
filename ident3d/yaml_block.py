"""Block-style YAML for the cards ident3d writes (dataset cards, model-index, eval results) without a
YAML dependency: dicts, lists and scalars, strings JSON-quoted (JSON strings are valid YAML)."""

from __future__ import annotations

import json
from typing import Any


def yaml_lines(value: Any, indent: int = 0) -> list[str]:
    """Block-style YAML of dicts, lists and scalars; strings are JSON-quoted (valid YAML)."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines += [f"{pad}{key}:", *yaml_lines(item, indent + 2)]
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
    else:
        for item in value:
            inner = yaml_lines(item, indent + 2) if isinstance(item, dict | list) else [_scalar(item)]
            lines.append(f"{pad}- {inner[0].lstrip()}")
            lines += inner[1:]
    return lines


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | dict):
        return "[]" if isinstance(value, list) else "{}"  # only empty ones reach here
    return json.dumps(str(value), ensure_ascii=False)
