"""Every command and code block of README.md and of the documentation pages that hold the user
guides (``PAGES``) runs, in that order, in a scratch folder; a line or block already run by an
earlier page is not run again (the README's quickstarts repeat lines of the guides).

Only sizes are shrunk, mostly by appending flags (argparse keeps the last value), so the pages
show real commands: renders use the preview preset at 64 px with 24 images (a shard I/N becomes
I/1; a split grown from one of them gets 30) except track renders, which find the CPU track's
whole 5,000-image test split already there (copied from the session's cached render,
``cpu_track_data`` in conftest.py, which the page's own ``audit --track`` line proves to be the
track's by re-rendering a random sample); training runs 2 steps on CPU, downloads come from a fake
Zenodo record on 127.0.0.1, and leaderboard commands write into the scratch folder instead of the
repository. `make demo` is run by test_demo.py (as `ident3d demo`) and `make test` is this suite
itself; no other line is skipped.
The hour-long reproduction commands sit in `text` blocks: documented, not CI's to run. The bundle
the README's `ident3d publish` writes (the CPU track's test split) is checked as the Croissant
validator checks it. Then every example in the docstrings of the API page (docs/api.md) runs on the
quickstarts' data. The time each numbered README quickstart took here is printed beside the time its
heading states at full size (which `python -m benchmarks.quickstarts` measures).
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import FakeZenodo, make_tar, write_fake_split

from benchmarks.quickstarts import bash_commands, code_blocks, leaderboard_flags, quickstarts

pytestmark = [pytest.mark.blender, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / name for name in ("README.md", "docs/tracks.md", "docs/rendering.md", "docs/variants.md",
                                  "docs/data.md", "docs/evaluation.md", "docs/training.md",
                                  "docs/leaderboard.md", "docs/index.md")]
SKIPPED = {"make demo", "make test"}


def shrink(argv: list[str], scratch: Path, zenodo_url: str) -> list[str]:
    """Append the flags that make a README command small enough for CI."""
    verb = argv[1]
    previous = [None, *argv[:-1]]
    size = "30" if "--grow-from" in argv else "24"  # a grown split is larger than the 24 it grows from
    argv = [size if flag == "--n" else re.sub(r"/\d+$", "/1", a) if flag == "--shard" else a
            for flag, a in zip(previous, argv, strict=True)]
    extra = {
        "render": ["--preset", "preview", "--samples", "1", "--workers", "2"],
        "traverse": ["--preset", "preview", "--samples", "1", "--steps", "3"],
        "train": ["--iterations", "2", "--batch-size", "8", "--device", "cpu"],
        "download": ["--record", "999", "--base-url", zenodo_url],
    }.get(verb, leaderboard_flags(argv, scratch))
    if {"--finalize", "--track", "--grow-from"} & set(argv):  # a track's or a source split's settings
        extra = []
    return argv + extra


@pytest.mark.timeout(1500)  # every README command, renders and training included
def test_every_readme_command_runs(tmp_path, monkeypatch, cpu_track_data):
    from ident3d.leaderboard.entries import ENTRIES_DIR

    shutil.copytree(ENTRIES_DIR, tmp_path / "entries")
    # The CPU track's test split as `ident3d render --track` leaves it, from the cross-run cache: the
    # render command then finds it complete, and `audit --track` still re-renders a random sample.
    for root in ("data/preview", "data/cpu-track"):  # the README's quickstarts, the tracks page
        shutil.copytree(cpu_track_data / "test", tmp_path / root / "test")
    write_fake_split(tmp_path / "src/3dident", "test", n=20, manifest=False)
    server = FakeZenodo({"3dident_test.tar": make_tar(tmp_path / "src/3dident", "3dident")})
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0"}
    section_of = {block: f"{q.number}. {q.title} ({q.stated})"
                  for q in quickstarts((REPO / "README.md").read_text()) for _, block in q.blocks}
    seconds = defaultdict(float)
    command_seconds = {}
    ran = []
    try:
        for language, block in (b for page in PAGES for b in code_blocks(page.read_text())):
            if block in ran:
                continue
            start = time.perf_counter()
            if language == "python":
                result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env,
                                        capture_output=True, text=True, timeout=600)
                assert result.returncode == 0, f"README python block failed:\n{block}\n{result.stderr}"
                ran.append(block)
            for line in bash_commands(block) if language == "bash" else []:
                if line in SKIPPED or line in ran:
                    continue
                argv = shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: env[m[1]], line))
                if argv[:2] == ["python", "-m"] and argv[2].startswith("ident3d."):  # a module of ident3d
                    command = [sys.executable, *argv[1:]]
                else:
                    assert argv[0] == "ident3d", f"README command is not an ident3d command: {line}"
                    command = [sys.executable, "-m", "ident3d.cli", "-q",
                               *shrink(argv, tmp_path, server.url)[1:]]
                started = time.perf_counter()
                result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                                        timeout=600)
                command_seconds[line] = time.perf_counter() - started
                assert result.returncode == 0, f"README command failed: {line}\n{result.stderr[-3000:]}"
                ran.append(line)
            if block in section_of:
                seconds[section_of[block]] += time.perf_counter() - start
        examples = api_examples()
        for example in examples:  # the API page's docstring examples, on the quickstarts' data
            result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, timeout=600)
            assert result.returncode == 0, f"API example failed:\n{example}\n{result.stderr[-3000:]}"
    finally:
        server.close()
    assert len(examples) >= 7  # the data, pairs, evaluation, render and leaderboard entries
    # Each quickstart's time at this test's sizes, beside what its heading states at full size
    # (python -m benchmarks.quickstarts measures those): shown with -s or in the captured output.
    print("README quickstarts at test size (stated: at full size):")
    for section, spent in seconds.items():
        print(f"  {section}: {spent:.1f} s")
    print("The ten slowest commands at test size:")
    for line, spent in sorted(command_seconds.items(), key=lambda item: -item[1])[:10]:
        print(f"  {spent:6.1f} s  {line}")
    assert len(seconds) == len(set(section_of.values())) >= 6  # every numbered quickstart ran
    verbs = {line.split()[1] for line in ran if line.startswith("ident3d")}
    assert verbs >= {"render", "traverse", "download", "audit", "pack", "evaluate", "train", "leaderboard"}
    assert verbs >= {"publish", "export", "import"}
    assert sum("\n" in block for block in ran) == 5  # the python blocks (a bash line has no newline)
    # re-scored identically
    assert "ident3d leaderboard rescore ident3d-eval-v1/Ident2026CpuTrack_v2-pixels" in " ".join(ran)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert_valid_croissant(tmp_path / "bundles/cpu-track")
    assert json.loads((tmp_path / "result.json").read_text())["model"]["name"] == "MyModel"
    assert (tmp_path / "entries/ident3d-eval-v1/Doe2026Contrastive_smoke.json").exists()
    assert (tmp_path / "site/index.html").exists() and (tmp_path / "traversal-v2.png").exists()


def api_examples() -> list[str]:
    """The ```python examples in the docstrings of every object docs/api.md documents (``::: name``)."""
    import importlib
    import inspect
    import textwrap

    examples = []
    for dotted in re.findall(r"^::: ([\w.]+)$", (REPO / "docs/api.md").read_text(), flags=re.M):
        if not dotted.startswith("ident3d."):  # render/ and leaderboard/ are documented from their folders
            dotted = f"ident3d.{dotted}"
        module, _, name = dotted.rpartition(".")
        try:
            obj = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError:  # a module documented as a whole
            obj = importlib.import_module(dotted)
        doc = inspect.cleandoc(obj.__doc__ or "")
        examples += [textwrap.dedent(block) for language, block in code_blocks(doc) if language == "python"]
    return examples


def assert_valid_croissant(bundle: Path) -> None:
    """The Croissant validator's three checks, and one record against the split it came from."""
    import numpy as np

    from ident3d.datasets import ThreeDIdent

    mlc = pytest.importorskip("mlcroissant")
    assert json.loads((bundle / "croissant.json").read_text())["name"] == "3dident-v2-64@1"
    dataset = mlc.Dataset(jsonld=str(bundle / "croissant.json"))
    assert not dataset.metadata.ctx.issues.errors, dataset.metadata.ctx.issues.report()
    first = {rs.uuid: next(iter(dataset.records(record_set=rs.uuid))) for rs in dataset.metadata.record_sets}
    record = first["images"]
    split = ThreeDIdent(bundle.parent.parent / "data/cpu-track", "test")
    i = record["images/index"]
    assert np.array_equal(np.asarray(record["images/raw_latents"], dtype=np.float32), split.latents[i])
    assert np.array_equal(np.asarray(record["images/image"].convert("RGB")), split.load_array(i))
    datasets = pytest.importorskip("datasets")  # and `datasets` reads it through the card's configs
    loaded = datasets.load_dataset(str(bundle), cache_dir=str(bundle.parent / "hf-cache"))
    assert list(loaded) == ["test"] and len(loaded["test"]) == len(split)
    assert loaded["test"][i]["caption"] == split.captions[i]
