"""Training one model with several processes (torchrun, DistributedDataParallel over gloo on the CPU):
the same steps as one process with the global batch, rank 0 alone writes, and a killed run resumes."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from conftest import write_fake_split
from safetensors import safe_open

from ident3d.baselines.config import load_preset
from ident3d.baselines.positives import StepBatches
from ident3d.baselines.train import read_log, train

STEPS, BATCH = 20, 8


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp-data")
    write_fake_split(root, "train", n=120, size=32)  # no test split: the runs end at their checkpoint
    return root


def torchrun(data, out, *extra, steps=STEPS, wait=True):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
               "-m", "ident3d", "train", "--preset", "smoke", "--data", str(data), "--out", str(out),
               "--iterations", str(steps), "--batch-size", str(BATCH), "--quiet",
               "--set", "log_every=1", "--set", "checkpoint_every=2", "--set", "eval_every=0", *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if not wait:
        return subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def checkpoint(run, pattern):
    with safe_open(str(run / "checkpoint.safetensors"), "pt") as f:
        return {key: f.get_tensor(key).double() for key in f.keys() if re.fullmatch(pattern, key)}


@pytest.fixture(scope="module")
def two_processes(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("two") / "run"
    torchrun(data, out)
    return out


def test_each_rank_takes_its_slice_of_the_one_process_batch_in_rank_order():
    alone = list(StepBatches(3, 6, 8))
    ranks = [list(StepBatches(3, 6, 8, shard=(rank, 2))) for rank in range(2)]
    assert [a + b for a, b in zip(*ranks, strict=True)] == alone


def test_global_batch_norm_is_torchs_batch_norm_in_float32_whatever_its_input(tmp_path):
    # One process in a gloo group runs the global path: the same output, gradients and running
    # statistics as torch's layer, and float32 statistics from a bf16 input (CUDA autocast's dtype).
    import torch.distributed as dist

    from ident3d.baselines.distributed import GlobalBatchNorm2d

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'group'}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        for dtype in (torch.float32, torch.bfloat16):
            plain, mine = torch.nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
            with torch.no_grad():
                plain.weight.uniform_(0.5, 1.5)
                plain.bias.uniform_(-0.5, 0.5)
            mine.load_state_dict(plain.state_dict())
            mine.__class__ = GlobalBatchNorm2d
            x = (3 * torch.randn(8, 4, 5, 5) + 1).to(dtype)
            a, b = x.float().clone().requires_grad_(), x.clone().requires_grad_()
            out, expected = mine(b), plain(a)
            assert out.dtype == torch.float32
            torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
            (out * torch.arange(4.0).view(1, 4, 1, 1)).sum().backward()
            (expected * torch.arange(4.0).view(1, 4, 1, 1)).sum().backward()
            loose = dtype == torch.bfloat16  # the input's gradient comes back in bf16
            torch.testing.assert_close(b.grad.float(), a.grad, rtol=1e-2 if loose else 1e-5,
                                       atol=1e-2 if loose else 1e-6)
            for name in ("running_mean", "running_var"):
                torch.testing.assert_close(getattr(mine, name), getattr(plain, name), rtol=1e-5, atol=1e-6)
            for name in ("weight", "bias"):  # sums of 200 terms whose exact sum can be 0: absolute
                torch.testing.assert_close(getattr(mine, name).grad, getattr(plain, name).grad, rtol=1e-5,
                                           atol=1e-4)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_processes_take_the_step_one_process_takes_with_the_global_batch(data, two_processes, tmp_path):
    # Adam's first moment after one step is a tenth of the step's gradient, so the checkpoints compare
    # the gradients themselves: every rank's loss over the global batch, summed back through the
    # gathers and averaged by DistributedDataParallel, is the one-process gradient (measured: within
    # 2e-5 of each tensor's largest value; float sums in another order). After the first update the
    # runs part as two one-process runs at 1 and 2 threads part (Adam's step is about lr for every
    # weight, whatever its gradient's size, so rounding flips near-zero gradients' steps): the losses
    # are compared for the first two steps, where both stay within 1e-4.
    train(load_preset("smoke", data=str(data), iterations=1, batch_size=BATCH, log_every=1,
                      checkpoint_every=1, eval_every=0), tmp_path / "alone", progress=False)
    torchrun(data, tmp_path / "two", steps=1)
    for pattern in (r"optimizer\.\d+\.exp_avg", r"model\..*running_(mean|var)"):
        alone, two = checkpoint(tmp_path / "alone", pattern), checkpoint(tmp_path / "two", pattern)
        assert alone and alone.keys() == two.keys()
        for key in alone:
            scale = alone[key].abs().max().item()
            assert (two[key] - alone[key]).abs().max().item() <= 1e-4 * scale, key
    train(load_preset("smoke", data=str(data), iterations=2, batch_size=BATCH, log_every=1,
                      checkpoint_every=2, eval_every=0), tmp_path / "alone-2", progress=False)
    np.testing.assert_allclose([r["loss"] for r in read_log(two_processes / "log.jsonl")][:2],
                               [r["loss"] for r in read_log(tmp_path / "alone-2" / "log.jsonl")], rtol=1e-4)


@pytest.mark.slow
def test_rank_0_alone_writes_one_log_and_one_run_folder(two_processes):
    log = read_log(two_processes / "log.jsonl")
    assert [r["step"] for r in log] == list(range(1, STEPS + 1))
    assert len({round(r["loss"], 4) for r in log}) > 1, "the loss never changed"
    assert sorted(p.name for p in two_processes.iterdir()) == [
        "checkpoint.safetensors", "config.json", "encoder.pt2", "encoder.safetensors", "log.jsonl",
        "processes.json"]
    assert json.loads((two_processes / "processes.json").read_text()) == {
        "world_size": 2, "per_rank_batch": BATCH // 2, "global_batch": BATCH}


@pytest.mark.slow
def test_a_killed_two_process_run_resumes_to_the_unbroken_run(data, two_processes, tmp_path):
    out = tmp_path / "killed"
    job = torchrun(data, out, steps=STEPS * 50, wait=False)  # long enough to be killed mid-run
    deadline = time.monotonic() + 300
    while len(read_log(out / "log.jsonl")) < 3 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.05)
    job.send_signal(signal.SIGTERM)  # as Slurm or Ctrl-C stops a job: torchrun stops its workers
    job.wait(timeout=120)
    killed_at = len(read_log(out / "log.jsonl"))
    time.sleep(1)
    assert len(read_log(out / "log.jsonl")) == killed_at, "a worker outlived torchrun"
    assert (out / "checkpoint.safetensors").exists(), job.stderr.read()[-3000:]
    assert 2 <= killed_at < STEPS, f"killed at step {killed_at}: not mid-run"
    torchrun(data, out, "--resume")  # the rest of the steps, to the unbroken run's length
    resumed, unbroken = read_log(out / "log.jsonl"), read_log(two_processes / "log.jsonl")
    assert [r["step"] for r in resumed] == list(range(1, STEPS + 1))
    np.testing.assert_allclose([r["loss"] for r in resumed], [r["loss"] for r in unbroken], rtol=1e-6)
    a, b = checkpoint(out, r"model\..*"), checkpoint(two_processes, r"model\..*")
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6, msg=key)


@pytest.mark.slow
def test_several_processes_refuse_a_folder_that_holds_files(data, tmp_path):
    out = tmp_path / "held"
    out.mkdir()
    (out / "notes.txt").write_text("someone's notes")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
               "-m", "ident3d", "train", "--preset", "smoke", "--data", str(data), "--out", str(out),
               "--iterations", "2", "--batch-size", "8", "--quiet"]
    done = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode != 0
    assert "error: --out" in done.stderr and "holds files" in done.stderr
    assert (out / "notes.txt").read_text() == "someone's notes" and len(list(out.iterdir())) == 1
