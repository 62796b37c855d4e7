"""The one driver of every experiment: a list of jobs, run resumably and shared by processes.

A job is a unit of work with a file that exists once it is finished (a result, a run record). The
driver skips finished jobs and claims each other one with an exclusive lock file holding the
claimer's pid and the machine's boot id; a job claimed by a live process is skipped (``wait=False``,
for independent runs) or waited for (``wait=True``, for what later jobs need, such as the data), and
a job whose claimer died is taken over; the job itself resumes from whatever it left on disk (a
checkpoint, rendered images). So any number of processes, on one machine or on a cluster's shared
folder, may run the same experiment into the same folder.

Users: the image experiments (``ident3d.baselines.experiment``: data, then training and scoring
runs) and the synthetic sweeps (``ident3d.baselines.synthetic.sweep``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ident3d.errors import TrainingError
from ident3d.readers import read_regular

log = logging.getLogger(__name__)

POLL_SECONDS = 10.0


@dataclass(frozen=True)
class Job:
    name: str  # unique in its folder: names the lock file
    done: Path  # exists once the job is finished
    run: Callable[[], object]
    wait: bool = False  # when another process holds it: wait for it (True) or skip it (False)


def _owner() -> str:
    """This process as a lock records it: pid and the machine's boot id (a pid recurs after a reboot)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{os.getpid()} {boot}"


def _held(text: str) -> bool:
    """Whether the owner recorded in a lock is a live process of this boot."""
    pid, _, boot = text.strip().partition(" ")
    if not pid.isdigit() or boot != _owner().partition(" ")[2]:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def claim(lock: Path) -> Iterator[bool]:
    """Yield True if this process now owns ``lock`` (taking over one whose owner died), else False.
    Something at ``lock`` that is not a lock file (a folder, a FIFO, a large file) is left alone."""
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                text = read_regular(lock, 256).decode("ascii")
            except (OSError, ValueError):
                log.warning("%s is not a lock file this command wrote; its job is skipped", lock)
                yield False
                return
            if _held(text):
                yield False
                return
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(descriptor, "w") as handle:
            handle.write(_owner())
        try:
            yield True
        finally:
            lock.unlink(missing_ok=True)
        return
    yield False


def run_jobs(jobs: Sequence[Job], locks: Path, poll: float = POLL_SECONDS) -> list[Path]:
    """Run every job of ``jobs`` in order that is neither finished nor held by another process (see
    the module docstring); return the ``done`` files this process wrote. Lock files go in ``locks``."""
    locks.mkdir(parents=True, exist_ok=True)
    written = []
    for job in jobs:
        while not job.done.exists():
            with claim(locks / f".{job.name}.lock") as owned:
                if owned:
                    job.run()
                    written.append(job.done)
                    break
            if not job.wait:
                log.info("%s is being run by another process; skipped", job.name)
                break
            lock = locks / f".{job.name}.lock"
            if lock.exists() and not lock.is_file():  # claim() leaves it alone; waiting would never end
                raise TrainingError(f"{lock}: not a lock file this driver wrote, and {job.name} is needed "
                                      "by the jobs after it. Fix: move it away and run again.")
            log.info("%s is being run by another process; waiting for it", job.name)
            time.sleep(poll)
    return written
