"""The fork server: one process per evaluator imports torch and the rebuild code once (2-3 s of CPU)
and then forks a fresh sandbox child for every model, so each model after the first starts in
milliseconds.

``ident3d.sandbox.spawn`` starts it as it started every sandbox process before: in an empty temporary
folder, with a minimal environment and its own session, dying with the evaluator. The server never
receives a byte of a model and never runs one: it imports, forks, reaps and reports. Each child, first
of all, keeps nothing of the server's it does not need (every descriptor but its two pipes and stderr,
the server's signal handling), starts its own session in its own folder and dies with the server
(which dies with the evaluator); then it lives the sandbox child's whole life
(``ident3d.sandbox.child.main``: warm up, lock down, and only then read the model).

The server reaps its children at once and tells the evaluator how each ended (a signal as a negative
code, as ``subprocess.Popen`` reports it), and kills one on request only while it is still its
unreaped child, so a pid the system has handed to another process is never signalled.

Messages on a SOCK_SEQPACKET socket pair, one message each:

- evaluator to server: ``F`` and the child's folder, with the child's stdin (read end) and stdout
  (write end) attached; ``K`` and a pid (kill that child's process group);
- server to evaluator: ``P`` and the pid of the child just forked; ``X``, a pid and its exit code.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct

from ident3d.sandbox import lockdown

PID = struct.Struct("!i")
EXIT = struct.Struct("!ii")
MAX_MESSAGE = 4096


def _import_sandbox_code() -> None:
    """What every child imports before it reads its settings: imported once, here."""
    import torch  # noqa: F401
    import torch._export.serde.serialize  # noqa: F401

    import ident3d.sandbox.child  # noqa: F401
    import ident3d.sandbox.loading  # noqa: F401
    import ident3d.sandbox.pt2_reader  # noqa: F401
    import ident3d.sandbox.wire  # noqa: F401
    from ident3d import inference  # noqa: F401
    from ident3d.sandbox import limits  # noqa: F401


def _become_child(control: socket.socket, pipes: list[int], folder: str, server: int) -> None:
    """In the forked process: shed the server, then serve one model for the rest of its life."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        control.detach()  # closed below with the rest; the object must never close a reused number
        os.setsid()
        os.dup2(pipes[0], 0)
        os.dup2(pipes[1], 1)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the control socket, the wake-up pipe, the originals
        os.chdir(folder)
        os.environ["HOME"] = os.environ["TMPDIR"] = folder
        lockdown.die_with_parent(server)
        from ident3d.sandbox.child import main

        code = main()
    finally:
        os._exit(code)


def _reap(children: set[int], control: socket.socket) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        control.send(b"X" + EXIT.pack(pid, os.waitstatus_to_exitcode(status)))


def serve(evaluator: int, control_fd: int) -> None:
    """The server's whole life: die with the evaluator (pid ``evaluator``), import, then fork on
    request until the evaluator closes its end of ``control_fd``."""
    lockdown.die_with_parent(evaluator)
    _import_sandbox_code()
    control = socket.socket(fileno=control_fd)
    wake = os.pipe()
    os.set_blocking(wake[1], False)
    signal.set_wakeup_fd(wake[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wake-up pipe hears of each exit
    children: set[int] = set()
    try:
        while True:
            ready, _, _ = select.select([control, wake[0]], [], [])
            if wake[0] in ready:
                os.read(wake[0], 4096)
            _reap(children, control)
            if control not in ready:
                continue
            message, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 2)
            if not message:
                break  # the evaluator is gone or done: the children die with this process
            if message[:1] == b"F" and len(fds) == 2:
                server = os.getpid()
                pid = os.fork()
                if pid == 0:
                    _become_child(control, fds, message[1:].decode(), server)
                children.add(pid)
                control.send(b"P" + PID.pack(pid))
            elif message[:1] == b"K" and len(message) == 1 + PID.size:
                (pid,) = PID.unpack(message[1:])
                if pid in children:  # unreaped, so the pid is still this child's (or its zombie's)
                    for kill in (os.kill, os.killpg):  # the process even before its setsid, then its group
                        try:
                            kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            for fd in fds:
                os.close(fd)
    finally:
        os._exit(0)
