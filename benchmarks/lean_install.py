"""Lean install benchmark: the core plus FAISS on PyTorch's CPU build, in a fresh virtual environment.

    python -m benchmarks.lean_install [--torch "PIP ARGS"] [--venv DIR] [--write]   (repo root)

Creates a venv, installs torch the way ``--torch`` says (by default PyTorch's CPU index), then
``ident3d[faiss]`` from this clone, and measures the time of each step and the venv's size. In the
new venv it then writes a small fake split, exports a small encoder and scores it with
``ident3d.evaluate`` (the sandboxed path), and lists what must not be there: bpy, torchvision,
NVIDIA or CUDA distributions, and CUDA libraries mapped into the process. Prints a Markdown
section; ``--write`` also commits the figures to ``benchmarks/measured/lean-install.json`` and
regenerates the README's measured line from them through the reports registry.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ident3d import atomic
from ident3d.baselines import measured_tables, reports

REPO = Path(__file__).resolve().parent.parent
CPU_INDEX = "torch --index-url https://download.pytorch.org/whl/cpu"
FIGURES = measured_tables.measured_file(REPO, measured_tables.LEAN_INSTALL)  # what the README shows

# Run by the new venv's Python: what is installed, and one real evaluation.
CHECK = r"""
import json, sys, tempfile
from importlib.metadata import distributions
from pathlib import Path
import torch
import ident3d
from ident3d.fake_splits import write_fake_split

names = sorted({d.metadata["Name"].lower() for d in distributions()})
with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    write_fake_split(root, "test", n=64, size=16, pixels="network")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))
    auto = torch.export.Dim.AUTO
    program = torch.export.export(model.eval(), (torch.rand(2, 3, 16, 16),),
                                  dynamic_shapes=({0: auto, 2: auto, 3: auto},))
    torch.export.save(program, root / "encoder.pt2")
    result = ident3d.evaluate(root / "encoder.pt2", root, progress=False)
maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
cuda = sorted({line.split()[-1].rsplit("/", 1)[-1] for line in maps.splitlines()
               if any(part in line for part in ("libcuda", "libcudnn", "libcublas", "libnccl", "/nvidia/"))})
print(json.dumps({"distributions": names, "torch": torch.__version__,
                  "cuda_available": torch.cuda.is_available(), "cuda_libraries_mapped": cuda,
                  "evaluated": sorted(k for k, v in result.metrics.items() if v is not None),
                  "python": sys.version.split()[0]}))
"""

UNWANTED = ("bpy", "torchvision", "triton")  # and any nvidia-* or cuda-* distribution


def unwanted(names: list[str]) -> list[str]:
    return [n for n in names if n in UNWANTED or n.startswith(("nvidia-", "cuda-"))]


def timed_pip(python: Path, args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([str(python), "-m", "pip", "install", "-qq", *args], check=True)
    return time.perf_counter() - start


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def measure(venv: Path, torch_args: str) -> dict:
    """Build the lean venv at ``venv`` and return the figures (see the module's docstring)."""
    if venv.exists():
        raise SystemExit(f"error: {venv} already exists; this benchmark builds a new venv and never "
                         "writes into an existing folder. Fix: name a path that does not exist yet.")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    torch_seconds = timed_pip(python, shlex.split(torch_args))
    core_seconds = timed_pip(python, ["-e", f"{REPO}[faiss]"])  # the README's recipe
    check = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True,
                           cwd=tempfile.gettempdir())  # not the clone: the installed package
    if check.returncode:
        raise SystemExit(f"error: the lean venv {venv} could not evaluate:\n{check.stderr}")
    found = json.loads(check.stdout.strip().splitlines()[-1])
    return {"torch_install": torch_args, "torch_seconds": round(torch_seconds, 1),
            "core_seconds": round(core_seconds, 1), "venv_mb": round(size_mb(venv)),
            "unwanted": unwanted(found["distributions"]), **found}


def markdown(figures: dict) -> str:
    return "\n".join([
        f"torch installed with `pip install {figures['torch_install']}` (torch {figures['torch']}); "
        f"Python {figures['python']}\n",
        "| step | seconds |\n|---|---:|",
        f"| torch (CPU build) | {figures['torch_seconds']} |",
        f"| `ident3d[faiss]` from the clone | {figures['core_seconds']} |\n",
        f"venv size: {figures['venv_mb']:,} MB; distributions: {len(figures['distributions'])}; "
        f"bpy, torchvision, NVIDIA or CUDA distributions: {', '.join(figures['unwanted']) or 'none'}; "
        f"CUDA libraries mapped while evaluating: {', '.join(figures['cuda_libraries_mapped']) or 'none'}; "
        f"`ident3d.evaluate` scored: {', '.join(figures['evaluated'])}",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", default=CPU_INDEX,
                        help=f"pip arguments that install torch (default: {CPU_INDEX})")
    parser.add_argument("--venv", type=Path, help="where to build the venv (default: a temporary folder)")
    parser.add_argument("--write", action="store_true",
                        help=f"commit the figures to {FIGURES.relative_to(REPO)}, regenerate the README line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(args.venv or Path(tmp) / "venv", args.torch)
    print(markdown(figures))
    if args.write:
        atomic.write_bytes(FIGURES, (json.dumps(figures, indent=1) + "\n").encode())
        reports.main(["--write", "--only", "lean-install"])


if __name__ == "__main__":
    main()
