"""Start sandbox processes (no torch here, so a command can start the server before importing torch).

Every sandbox child is forked by this evaluator's fork server (``ident3d.sandbox.forkserver``), which
imports torch and the rebuild code once; the evaluator meanwhile imports torch itself and opens the
data. ``prestart()`` starts the server early; ``take()`` forks a child for the next
``SandboxedModel`` (starting the server first, or again if it died). ``SandboxProcess`` is the
child as the evaluator sees it: its pid, its two pipes, and how it ended, which the server reports.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ident3d.sandbox.forkserver import EXIT, MAX_MESSAGE, PID

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
FORK_SECONDS = 120  # the server imports torch before it forks the first child; a loaded machine is slow


class ServerGone(OSError):
    """The fork server is not answering (it died, or was never able to start)."""


def _environment(temp: str) -> dict[str, str]:
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", "HOME": temp, "TMPDIR": temp, "MALLOC_ARENA_MAX": "2"}
    for name in ("CUDA_VISIBLE_DEVICES", "IDENT3D_SANDBOX_DEBUG"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


class ForkServer:
    """The evaluator's end of one fork server process."""

    def __init__(self) -> None:
        self.temp = tempfile.mkdtemp(prefix="ident3d-sandbox-")
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        launcher = (f"import sys; sys.path.insert(0, {str(PACKAGE_ROOT)!r}); "
                    f"from ident3d.sandbox.forkserver import serve; serve({os.getpid()}, {theirs.fileno()})")
        debug = "IDENT3D_SANDBOX_DEBUG" in os.environ
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", launcher], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=None if debug else subprocess.DEVNULL, cwd=self.temp, env=_environment(self.temp),
            close_fds=True, pass_fds=[theirs.fileno()], start_new_session=True)
        theirs.close()
        self.socket, self.owner = mine, os.getpid()
        self.exits: dict[int, int] = {}
        self.lock = threading.Lock()
        self.gone = False

    def _next(self, deadline: float | None) -> int | None:
        """Read one message: the pid of a fork it announces, or None (an exit, kept in ``exits``).
        Raises ``TimeoutError`` when the deadline passes first, ``ServerGone`` when the server left."""
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not select.select([self.socket], [], [], timeout)[0]:
            raise TimeoutError
        message = self.socket.recv(MAX_MESSAGE)
        if not message:
            self.gone = True
            raise ServerGone("the sandbox fork server stopped")
        if message[:1] == b"X" and len(message) == 1 + EXIT.size:
            pid, code = EXIT.unpack(message[1:])
            self.exits[pid] = code
        elif message[:1] == b"P" and len(message) == 1 + PID.size:
            return PID.unpack(message[1:])[0]
        return None

    def fork(self) -> SandboxProcess:
        folder = tempfile.mkdtemp(prefix="ident3d-sandbox-")
        child_stdin, to_child = os.pipe()
        from_child, child_stdout = os.pipe()
        try:
            with self.lock:
                socket.send_fds(self.socket, [b"F" + folder.encode()], [child_stdin, child_stdout])
                deadline = time.monotonic() + FORK_SECONDS
                try:
                    while (pid := self._next(deadline)) is None:
                        pass
                except TimeoutError:
                    raise ServerGone(f"the fork server did not fork within {FORK_SECONDS} s") from None
                self.exits.pop(pid, None)  # an earlier child's, whose pid the system has handed on
        except BaseException:
            for fd in (to_child, from_child):
                os.close(fd)
            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            os.close(child_stdin)
            os.close(child_stdout)
        os.set_blocking(to_child, False)
        return SandboxProcess(self, pid, folder, os.fdopen(to_child, "wb", buffering=0),
                              os.fdopen(from_child, "rb", buffering=0))

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """How child ``pid`` ended, or None while it runs past ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while pid not in self.exits:
                if self.gone or self.socket.fileno() < 0:  # its children died with it
                    return -signal.SIGKILL
                try:
                    self._next(deadline)
                except TimeoutError:
                    return None
                except OSError:
                    self.gone = True
            return self.exits[pid]

    def kill(self, pid: int) -> None:
        try:
            self.socket.send(b"K" + PID.pack(pid))
        except OSError:
            self.gone = True  # and so is the child

    def stop(self) -> None:
        self.gone = True
        self.socket.close()  # the server leaves, and its children die with it
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.temp, ignore_errors=True)


class SandboxProcess:
    """A forked sandbox child: the parts of ``subprocess.Popen`` the evaluator uses."""

    def __init__(self, server: ForkServer, pid: int, folder: str, stdin, stdout) -> None:
        self.server, self.pid, self.folder, self.stdin, self.stdout = server, pid, folder, stdin, stdout

    def poll(self) -> int | None:
        return self.server.exit_code(self.pid, 0)

    def wait(self, timeout: float | None = None) -> int:
        code = self.server.exit_code(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"sandbox process {self.pid}", timeout or 0)
        return code

    def kill(self) -> None:
        """SIGKILL the child and its group (the server checks it has not reaped the pid yet)."""
        self.server.kill(self.pid)


_server: list[ForkServer] = []


def prestart() -> None:
    """Start the fork server now, so it imports torch while this process does other work."""
    if _server and _server[0].owner != os.getpid():  # a copy in a process forked from its owner
        _server.clear()
    if not _server:
        _server.append(ForkServer())


def take() -> tuple[SandboxProcess, str]:
    """A new sandbox child in a new empty folder, and that folder."""
    prestart()
    try:
        child = _server[0].fork()
    except OSError:  # the server died (or hangs): one new server, one more try
        _server.pop().stop()
        prestart()
        child = _server[0].fork()
    return child, child.folder


@atexit.register
def _stop_server() -> None:
    while _server:
        server = _server.pop()
        if server.owner == os.getpid():
            server.stop()
