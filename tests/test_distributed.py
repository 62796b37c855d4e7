"""Training one model with several processes (torchrun, DistributedDataParallel over gloo on the CPU):
the same steps as one process with the global batch, rank 0 alone writes, and a killed run resumes."""

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
               "-m", "ident3d.baselines.train", "--preset", "smoke", "--data", str(data), "--out", str(out),
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
        "checkpoint.safetensors", "config.json", "encoder.pt2", "encoder.safetensors", "log.jsonl"]


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
               "-m", "ident3d.baselines.train", "--preset", "smoke", "--data", str(data), "--out", str(out),
               "--iterations", "2", "--batch-size", "8", "--quiet"]
    done = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode != 0
    assert "error: --out" in done.stderr and "holds files" in done.stderr
    assert (out / "notes.txt").read_text() == "someone's notes" and len(list(out.iterdir())) == 1
