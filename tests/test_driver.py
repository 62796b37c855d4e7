"""The experiments' driver: jobs claimed through lock files, skipped or waited for, taken over."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from ident3d.baselines.driver import Job, _owner, claim, run_jobs
from ident3d.errors import TrainingError


def test_a_live_claim_is_respected_and_a_dead_one_is_taken_over(tmp_path):
    lock = tmp_path / ".run.lock"
    with claim(lock) as owned:
        assert owned and lock.read_text() == _owner()
        with claim(lock) as again:
            assert not again  # held by a live process (this one)
    assert not lock.exists()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    boot = _owner().partition(" ")[2]
    for stale in (f"{dead} {boot}", f"{os.getpid()} an-earlier-boot", "garbage"):
        lock.write_text(stale)  # a dead owner; a live pid of another boot; not a pid at all
        with claim(lock) as owned:
            assert owned and lock.read_text() == _owner()
    os.mkfifo(lock)  # not a lock: never read into a hang, never removed
    with claim(lock) as owned:
        assert not owned
    assert lock.is_fifo()


def test_jobs_run_once_skip_what_another_process_holds_and_wait_for_what_they_need(tmp_path):
    ran = []

    def job(name, wait=False):
        done = tmp_path / f"{name}.done"
        return Job(name, done, lambda: (ran.append(name), done.write_text("ok")), wait=wait)

    (tmp_path / ".busy.lock").write_text(_owner())  # a live process (this one) holds "busy"
    assert run_jobs([job("a"), job("busy"), job("b")], tmp_path) == [tmp_path / "a.done", tmp_path / "b.done"]
    assert ran == ["a", "b"]
    assert run_jobs([job("a"), job("b")], tmp_path) == []  # finished: nothing runs again

    def release():  # the holder finishes "data" after a while; a waiting job must not run it again
        (tmp_path / "data.done").write_text("by the other process")
        (tmp_path / ".data.lock").unlink()

    (tmp_path / ".data.lock").write_text(_owner())
    timer = threading.Timer(0.3, release)
    timer.start()
    assert run_jobs([job("data", wait=True), job("c")], tmp_path, poll=0.05) == [tmp_path / "c.done"]
    timer.join()
    assert ran == ["a", "b", "c"] and (tmp_path / "data.done").read_text() == "by the other process"
    assert [p.name for p in tmp_path.glob(".*.lock")] == [".busy.lock"]  # only the other holder's


def test_a_needed_job_behind_something_that_is_not_a_lock_stops_with_the_path_named(tmp_path):
    (tmp_path / ".data.lock").mkdir()
    needed = Job("data", tmp_path / "data.done", lambda: None, wait=True)
    with pytest.raises(TrainingError, match=r"\.data\.lock: not a lock file"):
        run_jobs([needed], tmp_path, poll=0.01)
    assert (tmp_path / ".data.lock").is_dir()
