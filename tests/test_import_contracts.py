"""The rules between the rooms: one import name (the wheel installs ``ident3d`` and nothing else, the
rooms ``render/``, ``baselines/`` and ``leaderboard/`` as ``ident3d.render`` and so on, and no code
uses their old top-level names); the core (``ident3d`` without its command line) never imports the
other rooms at module level (it reaches them through entry points or inside a function); the command
line (``ident3d.cli``), which wires the rooms together, builds its parser without torch, FAISS or
Blender; ``ident3d.render`` and ``ident3d.leaderboard`` never load torch."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("render", "baselines", "leaderboard")
OTHER_ROOMS = tuple(f"ident3d.{room}" for room in ROOMS)


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
            for line, module in module_level_imports(path)
            if any(module == name or module.startswith(name + ".") for name in forbidden)]


def loaded_after(code: str, watched: tuple[str, ...] = ("torch", "torchvision", "faiss", "bpy")) -> list[str]:
    """Which of the ``watched`` packages (torch, FAISS and Blender unless told) running ``code`` in a
    fresh Python loads."""
    probe = code + f"\nimport sys\nprint(sorted(name for name in {watched!r} if name in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_the_core_imports_no_other_room_at_module_level():
    assert violations(ROOT / "ident3d", OTHER_ROOMS) == []


def test_the_command_line_builds_its_parser_without_torch_faiss_or_blender():
    assert loaded_after("import ident3d.cli\nident3d.cli.build_parser()") == []


def test_neither_the_parser_nor_the_evaluator_loads_scipy_stats():
    """scipy.stats takes about a second to import, at the start of every command that loaded it."""
    code = ("import ident3d.cli, ident3d.evaluation, ident3d.protocols, ident3d.fresh, ident3d.latents\n"
            "ident3d.cli.build_parser()")
    assert loaded_after(code, ("scipy.stats",)) == []


@pytest.mark.parametrize("wrong", ["model", "data", "split", "out"])
def test_evaluate_refuses_a_wrong_path_before_torch_or_the_sandbox_starts(tmp_path, wrong):
    """A mistyped path is one error line at once: the model file, the data root, its split and an
    output that exists are checked before torch is imported or the sandbox's server is started."""
    (tmp_path / "data" / "test").mkdir(parents=True)
    with zipfile.ZipFile(tmp_path / "model.pt2", "w") as archive:  # a .pt2's header: its checks come later
        archive.writestr("model/version", "1")
    (tmp_path / "result.json").write_text("{}")
    paths = {"model": str(tmp_path / "model.pt2"), "data": str(tmp_path / "data"), "split": "test",
             "out": str(tmp_path / "fresh-result.json")}
    paths[wrong] = {"model": str(tmp_path / "modle.pt2"), "data": str(tmp_path / "dta"), "split": "tset",
                    "out": str(tmp_path / "result.json")}[wrong]
    argv = ["evaluate", "--model", paths["model"], "--data", paths["data"], "--split", paths["split"],
            "--out", paths["out"]]
    code = ("import contextlib, io, ident3d.cli\nerr = io.StringIO()\n"
            f"with contextlib.redirect_stderr(err):\n    code = ident3d.cli.main({argv!r})\n"
            "said = err.getvalue()\n"
            f"assert code == 1 and said.startswith('error: ') and {paths[wrong]!r} in said, said")
    assert loaded_after(code, ("torch", "ident3d.sandbox.spawn")) == []
    assert (tmp_path / "result.json").read_text() == "{}"


def test_a_broken_rule_is_reported_with_file_and_line(tmp_path):
    core = tmp_path / "ident3d"
    core.mkdir()
    (core / "fine.py").write_text("def later():\n    import ident3d.baselines.train\n")
    (core / "bad.py").write_text("import os\ntry:\n    from ident3d.leaderboard.site import render_site\n"
                                 "except ImportError:\n    pass\n")
    assert violations(core, OTHER_ROOMS) == ["ident3d/bad.py:3 imports ident3d.leaderboard.site"]


@pytest.mark.parametrize("room", ["render", "leaderboard"])
def test_render_and_leaderboard_never_load_torch(room):
    modules = sorted("ident3d." + ".".join(p.relative_to(ROOT).with_suffix("").parts)
                     for p in (ROOT / room).rglob("*.py"))
    modules = [name.removesuffix(".__init__") for name in modules]
    loaded = loaded_after(f"import importlib\nfor name in {modules!r}:\n    importlib.import_module(name)")
    assert not {"torch", "torchvision"} & set(loaded), f"{room} loaded {loaded}"


def all_imports(path: Path) -> list[tuple[int, str]]:
    nodes = list(ast.walk(ast.parse(path.read_text(), str(path))))
    plain = [(n.lineno, alias.name) for n in nodes if isinstance(n, ast.Import) for alias in n.names]
    return plain + [(n.lineno, n.module) for n in nodes
                    if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module]


def test_no_code_uses_the_old_top_level_names():
    folders = ("ident3d", *ROOMS, "tests", "benchmarks")
    old = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))
           for line, module in all_imports(path) if module.split(".")[0] in ROOMS]
    assert old == []


def test_only_the_command_line_imports_the_command_line():
    """Drivers (the experiments, the demo's steps) call the library with typed arguments, not argv."""
    found = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for folder in ("ident3d", *ROOMS) for path in sorted((ROOT / folder).rglob("*.py"))
             if path.relative_to(ROOT).parts[:2] != ("ident3d", "cli") and path.name != "__main__.py"
             for line, module in all_imports(path) if module.split(".")[:2] == ["ident3d", "cli"]]
    assert found == []


def test_no_room_imports_the_benchmarks():
    """benchmarks/ is outside the wheel: an import of it from a room would fail once installed."""
    found = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for folder in ("ident3d", *ROOMS) for path in sorted((ROOT / folder).rglob("*.py"))
             for line, module in all_imports(path) if module.split(".")[0] == "benchmarks"]
    assert found == []


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_imports_under_one_name_only(room):
    """From a checkout (on sys.path), ``import baselines`` would load baselines/verdicts.py a second
    time as another module object beside ident3d.baselines.verdicts: refused, naming the import."""
    done = subprocess.run([sys.executable, "-c", f"import {room}.x"], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode != 0 and f"Fix: import ident3d.{room}" in done.stderr
    done = subprocess.run([sys.executable, "-c", f"import ident3d.{room}"], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr


def resolves_in_the_tree(module: str) -> bool:
    """Whether ``module`` is a file or package under ROOT the way a static tool finds it: by path."""
    base = ROOT.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def test_every_ident3d_import_resolves_by_path_alone():
    """No import hook is needed to find a module: editors, pyright and the wheel builder see the tree."""
    unresolved = [f"{path.relative_to(ROOT)}:{line} imports {module}"
                  for folder in ("ident3d", *ROOMS, "tests", "benchmarks")
                  for path in sorted((ROOT / folder).rglob("*.py"))
                  for line, module in all_imports(path)
                  if module.split(".")[0] == "ident3d" and not resolves_in_the_tree(module)
                  and not resolves_in_the_tree(module.rpartition(".")[0])]  # `import a.b.name` is rare
    assert unresolved == []


def test_the_rooms_are_links_so_every_module_has_one_copy():
    assert [(ROOT / "ident3d" / room).resolve() for room in ROOMS] == [ROOT / room for room in ROOMS]
    probe = ("import ident3d, ident3d.errors, ident3d.render.job, importlib.util\n"
             "print(ident3d.__path__, importlib.util.find_spec('ident3d.ident3d'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"[{str(ROOT / 'ident3d')!r}]", "None"]


@pytest.mark.slow
def test_the_wheel_installs_one_import_name(tmp_path):
    import zipfile

    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                           str(ROOT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("ident3d-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"ident3d", wheel.name.split("-py3")[0] + ".dist-info"}
    assert {"ident3d/render/job.py", "ident3d/baselines/train.py", "ident3d/leaderboard/page.html",
            "ident3d/baselines/presets/normal-box.toml"} <= set(names)
    assert not [n for n in names if "/." in n or n.endswith(".sh")]  # no hidden files, no scripts
    generated = ("ident3d/leaderboard/site/", "ident3d/baselines/synthetic/results/",
                 "ident3d/baselines/curves/")
    assert not [n for n in names if n.startswith(generated)]  # generated artefacts stay in the repository
    # the commands read these
    assert "ident3d/leaderboard/entries/ident3d-eval-v1/Ident2026CpuTrack_v2-pixels.json" in names
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    modules = module_names([n for n in names if n.endswith(".py")])
    paths, job = import_every_module(modules, cwd=tmp_path, pythonpath=tmp_path / "site").rsplit(" ", 1)
    assert str(ROOT) not in paths and job.strip().startswith(str(tmp_path / "site"))
    assert modules == module_names([p.relative_to(ROOT).as_posix() for p in source_files()])


def source_files() -> list[Path]:
    return [ROOT / "ident3d" / p.relative_to(ROOT).as_posix().removeprefix("ident3d/")
            for folder in ("ident3d", *ROOMS) for p in (ROOT / folder).rglob("*.py")
            if "__pycache__" not in p.parts]


def module_names(files: list[str]) -> list[str]:
    """Dotted names of .py files under ident3d/ (``__main__`` runs the command line, so it is left out)."""
    return sorted(f.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
                  for f in files if f.startswith("ident3d/") and not f.endswith("__main__.py"))


def import_every_module(modules: list[str], cwd: Path, pythonpath: Path | None = None) -> str:
    """Import ``modules`` in a fresh Python; returns what it prints: ident3d's search path and a file."""
    import os

    env = {**os.environ, **({"PYTHONPATH": str(pythonpath)} if pythonpath else {})}
    probe = (f"import importlib, ident3d\nfor name in {modules!r}:\n    importlib.import_module(name)\n"
             "print(ident3d.__path__, ident3d.render.job.__file__)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_every_module_imports_from_the_source_tree():
    modules = module_names([p.relative_to(ROOT).as_posix() for p in source_files()])
    assert {name.split(".")[1] for name in modules if name.count(".") > 1} >= {*ROOMS, "cli", "sandbox"}
    assert import_every_module(modules, cwd=ROOT).startswith(f"[{str(ROOT / 'ident3d')!r}]")
