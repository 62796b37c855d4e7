"""The rules between the rooms: the core (``ident3d`` without its command line) never imports
``render``, ``baselines`` or ``leaderboard`` at module level (it reaches them through entry points or
inside a function); the command line (``ident3d.cli``), which wires the rooms together, builds its
parser without torch, FAISS or Blender; ``render`` and ``leaderboard`` never load torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OTHER_ROOMS = ("render", "baselines", "leaderboard")


def module_level_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import that runs when ``path`` is imported (not inside a function)."""
    found = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.lineno, node.module))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            else:  # classes, if/try/with blocks run at import time
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit([n for n in getattr(node, field, []) if isinstance(n, ast.AST)])

    visit(ast.parse(path.read_text(), str(path)).body)
    return found


def violations(package: Path, forbidden: tuple[str, ...], exempt: str = "cli") -> list[str]:
    return [f"{path.relative_to(package.parent)}:{line} imports {module}"
            for path in sorted(package.rglob("*.py")) if exempt not in path.relative_to(package).parts
            for line, module in module_level_imports(path) if module.split(".")[0] in forbidden]


def loaded_after(code: str) -> list[str]:
    """Top-level packages of torch, FAISS and Blender that running ``code`` in a fresh Python loads."""
    probe = code + "\nimport sys\nprint(sorted({m.split('.')[0] for m in sys.modules} & " \
                   "{'torch', 'torchvision', 'faiss', 'bpy'}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_the_core_imports_no_other_room_at_module_level():
    assert violations(ROOT / "ident3d", OTHER_ROOMS) == []


def test_the_command_line_builds_its_parser_without_torch_faiss_or_blender():
    assert loaded_after("import ident3d.cli\nident3d.cli.build_parser()") == []


def test_a_broken_rule_is_reported_with_file_and_line(tmp_path):
    core = tmp_path / "ident3d"
    core.mkdir()
    (core / "fine.py").write_text("def later():\n    import baselines.train\n")
    (core / "bad.py").write_text("import os\ntry:\n    from leaderboard.site import render_site\n"
                                 "except ImportError:\n    pass\n")
    assert violations(core, OTHER_ROOMS) == ["ident3d/bad.py:3 imports leaderboard.site"]


@pytest.mark.parametrize("room", ["render", "leaderboard"])
def test_render_and_leaderboard_never_load_torch(room):
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                     for p in (ROOT / room).rglob("*.py"))
    loaded = loaded_after(f"import importlib\nfor name in {modules!r}:\n    importlib.import_module(name)")
    assert not {"torch", "torchvision"} & set(loaded), f"{room} loaded {loaded}"
