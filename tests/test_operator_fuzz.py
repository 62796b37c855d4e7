"""Every operator the sandbox admits, called with crafted shapes, strides and indices
(tests/operator_fuzz.py, in a process of its own): no crash, no result that depends on memory
outside its inputs, a refusal otherwise; a call the sandbox's pre-run check refuses is not run,
so a crash means that check let through a case that crashes. The allow-list's rule is in
ident3d/sandbox/operators.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ident3d.sandbox.loading import overload_refusal
from ident3d.sandbox.operators import ATEN, TRAINING_ARGUMENTS

REPO = Path(__file__).resolve().parents[1]


def test_the_allow_list_holds_public_operators_only():
    assert not [name for name in ATEN if name.startswith("_") or name.endswith("_for_cpu")]
    assert not [name for name in ATEN if not hasattr(torch.ops.aten, name)]  # no dead names
    assert {"conv2d", "batch_norm", "scaled_dot_product_attention"} <= ATEN  # what export writes


def test_the_training_rule_names_every_training_flag_of_the_allow_list():
    flags = {argument.name for name in ATEN for overload in getattr(torch.ops.aten, name).overloads()
             for argument in getattr(getattr(torch.ops.aten, name), overload)._schema.arguments
             if "train" in argument.name and str(argument.type) == "bool"}
    assert flags == TRAINING_ARGUMENTS


def test_scalar_arithmetic_out_and_numbered_type_overloads_are_refused():
    assert "no tensor" in overload_refusal(torch.ops.aten.remainder.int)  # remainder.int(1, 0): SIGFPE
    assert overload_refusal(torch.ops.aten.sym_size.int) is None  # a shape query of dynamic exports
    assert "out=" in overload_refusal(torch.ops.aten.add.out)
    assert "bare number" in overload_refusal(torch.ops.aten.to.prim_Device)  # dtype -3: SIGSEGV
    assert overload_refusal(torch.ops.aten.conv2d.default) is None


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_crafted_arguments_never_crash_or_read_outside_the_inputs(seed):
    done = subprocess.run([sys.executable, str(REPO / "tests/operator_fuzz.py"), str(REPO), str(seed), "12"],
                          capture_output=True, text=True, timeout=600)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    started = [line["start"] for line in lines if "start" in line]
    assert done.returncode == 0, f"the process died ({done.returncode}) in {started[-1:]}"
    finished = [line for line in lines if "done" in line]
    assert len(finished) == len(started) > 300
    assert not [(f["done"], f["differs"]) for f in finished if f["differs"]]
    covered = {f["done"].split(".")[0] for f in finished}
    assert covered == set(ATEN)  # every listed operator has an admitted overload that was called
    assert sum(f["same"] for f in finished) > 1000 and sum(f["refused"] for f in finished) > 1000
    checked = {f["done"].split(".")[0] for f in finished if f["checked"]}
    assert {"scaled_dot_product_attention", "upsample_nearest2d"} <= checked  # the check stood in front
