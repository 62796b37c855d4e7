"""Every example that a verb's --help prints parses as that verb's command line (a usage error in an
example, such as `evaluate --fresh` without a number, is what a newcomer copies first)."""

from __future__ import annotations

import importlib
import shlex
import shutil
from pathlib import Path

import pytest

from ident3d.cli import MODULE_OF_VERB, VERBS, build_parser

VARIANTS = Path(__file__).resolve().parents[1] / "ident3d" / "variants"


def examples() -> list[tuple[str, str]]:
    found = []
    for verb in VERBS:
        module = importlib.import_module(f"ident3d.cli.{MODULE_OF_VERB.get(verb, verb)}")
        found += [(verb, line.split("  #")[0].strip()) for line in module.EXAMPLE.splitlines()
                  if line.strip()]
    return found


@pytest.mark.parametrize(("verb", "line"), examples())
def test_every_help_example_parses(verb, line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that names a spec file finds one here
    shutil.copyfile(VARIANTS / "v2.toml", tmp_path / "my-variant.toml")
    words = shlex.split(line)
    assert words[0] == "ident3d", line  # a verb's examples may show the next step with another verb
    args = build_parser().parse_args(words[1:])  # a usage error exits 2 and fails the test
    assert args.verb in VERBS


def test_fresh_without_a_number_draws_the_tracks_default_size():
    args = build_parser().parse_args(["evaluate", "--data", "d", "--model", "m.pt2", "--fresh"])
    assert args.fresh == "track"
    counted = build_parser().parse_args(["evaluate", "--data", "d", "--model", "m.pt2", "--fresh", "300"])
    assert counted.fresh == 300
