"""Lock the sandbox process down before it reads a byte of a submitted model (Linux).

Three layers, applied by the child to itself (``ident3d.sandbox.child``):

1. resource limits: address space (the model's memory budget on top of what the warmed-up process
   already maps), CPU seconds, file size 0 (writing to any file kills the process with SIGXFSZ; the
   pipes to the parent are not files), no core dumps, a handful of open files;
2. ``PR_SET_NO_NEW_PRIVS``: nothing executed later can gain privileges;
3. a seccomp filter (libseccomp through ``pyseccomp``), an allow-list: every system call not in
   ``ALLOWED`` fails with EPERM, on every thread of the process (the filter is synchronised onto
   the threads torch started during the warm-up, and threads started later inherit it). What is
   left is what scoring needs: memory, threads, futexes, signals to itself, reading and writing the
   descriptors it already has (the two pipes), and the clock. Nothing opens a file, a socket or a
   process, and nothing reaches another process (no kill, tkill, pidfd, ptrace-like or
   descriptor-passing call), the mount API or kernel modules.

Once the model is loaded and warmed up on zeros, a second filter (``forbid_executable_memory``)
refuses new executable memory before it sees an image.

Where seccomp is missing (no libseccomp, another kernel) layers 1 and 2 still apply, the model
still sees only image batches, and the reader's allow-list admits no file or socket operator;
``status()`` reports what was applied and the evaluator records it in the result.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
from dataclasses import dataclass

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
CLONE_THREAD = 0x00010000
MAP_ANONYMOUS = 0x20  # the same on x86_64 and aarch64
PROT_EXEC = 0x4
F_GETFD, F_SETFD, F_GETFL, F_SETFL = 1, 2, 3, 4
O_ASYNC = 0o20000  # FASYNC on x86_64 and aarch64: with F_SETOWN/F_SETSIG, a signal to another process
# Found by tracing the child (strace -f) through the warm-up and a ResNet18 scoring of 600 images,
# plus what glibc and Python do on rarer paths (a signal, a new thread, an abort); one reason each.
ALLOWED = {
    "read": "receive settings, the model and image batches on stdin",
    "write": "send features on the protocol pipe",
    "readv": "glibc's buffered reads may gather",
    "writev": "glibc's buffered writes may scatter",
    "close": "Python closes descriptors it holds (never opens new ones)",
    "lseek": "Python's io layer asks a pipe for its position",
    "fcntl": "descriptor and status flags of the process's own descriptors (F_GETFD, F_SETFD, F_GETFL, "
             "F_SETFL without O_ASYNC only: see the rule below)",
    "fstat": "Python's io layer inspects a descriptor it already holds",
    "brk": "malloc grows the heap",
    "mmap": "malloc's large blocks and torch's tensors (anonymous mappings only: see the rule below)",
    "munmap": "freeing them",
    "mremap": "realloc of large blocks",
    "mprotect": "guard pages of new thread stacks",
    "madvise": "the allocator returns memory to the system",
    "futex": "every lock and condition variable (torch's thread pool, the GIL)",
    "set_robust_list": "a new thread registers its robust futex list",
    "rseq": "a new thread registers restartable sequences (glibc)",
    "clone": "new threads for torch's pool (CLONE_THREAD only: see the rule below)",
    "exit": "a thread ends",
    "exit_group": "the process ends",
    "sched_yield": "spin-waits in OpenMP and torch",
    "sched_getaffinity": "OpenMP sizes its pool from the CPUs it may use",
    "getpid": "glibc and Python ask for the process id",
    "gettid": "glibc asks for the thread id",
    "tgkill": "raise() and abort() signal the process itself (its own pid only: see the rule below)",
    "rt_sigaction": "Python installs signal handlers",
    "rt_sigprocmask": "glibc blocks signals around thread creation",
    "rt_sigreturn": "returning from a signal handler",
    "sigaltstack": "Python's faulthandler and new threads set up alternate signal stacks",
    "restart_syscall": "a system call interrupted by a signal resumes",
    "clock_gettime": "timing, where the vDSO falls back to the system call",
    "clock_getres": "clock resolution (Python's time module)",
    "gettimeofday": "timing on older glibc paths",
    "nanosleep": "short sleeps in spin-waits",
    "clock_nanosleep": "short sleeps in spin-waits",
    "getrandom": "hash seeds and torch's generators may ask for entropy",
    "seccomp": "the second stage stacks a stricter filter, which then refuses this call too (a filter "
               "can only take permissions away)",
}


class LockdownFailed(RuntimeError):
    """A layer that applied at start could not be added later: the child stops rather than run
    with less than it reported."""


@dataclass(frozen=True)
class Lockdown:
    memory_bytes: int
    cpu_seconds: int
    open_files: int = 64
    gpu: bool = False


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as f:  # pages: size resident shared ...
        return int(f.read().split()[0]) * resource.getpagesize()


def limit_resources(limits: Lockdown) -> None:
    """The model's memory budget on top of what the process maps now, CPU, no files, no cores."""
    address_space = _mapped_bytes() + limits.memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when the evaluator (pid ``parent``) dies, however it dies (SIGTERM,
    SIGKILL, a crash); if it already died before the request took effect, leave now."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def no_new_privileges() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0


def install_seccomp(gpu: bool = False) -> str:
    """Load the allow-list onto every thread; returns "active" or why not (the process then runs
    without it, and the evaluator records that in the result). With ``gpu`` the CUDA driver also
    gets ``ioctl`` and file-backed ``mmap`` on the device files it opened during the warm-up (not
    measured here: this project has no GPU machine; docs/submissions.md says so)."""
    try:
        import pyseccomp as seccomp
    except ImportError:
        return "unavailable (pyseccomp is not installed)"
    try:
        rules = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
        rules.set_attr(seccomp.Attr.CTL_TSYNC, 1)  # every thread, not only the calling one
        for name in ALLOWED.keys() - {"mmap", "clone", "tgkill", "fcntl"} | ({"ioctl"} if gpu else set()):
            try:
                rules.add_rule(seccomp.ALLOW, name)
            except (RuntimeError, ValueError, OSError):
                continue  # a call this architecture does not have (readv on some, say)
        # memory, never a view of a file: a descriptor the process holds cannot be mapped and written
        rules.add_rule(seccomp.ALLOW, "mmap",
                       *(() if gpu else (seccomp.Arg(3, seccomp.MASKED_EQ, MAP_ANONYMOUS, MAP_ANONYMOUS),)))
        # threads, never processes: glibc falls back from clone3 (whose flags seccomp cannot read)
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        rules.add_rule(seccomp.ALLOW, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, CLONE_THREAD))
        rules.add_rule(seccomp.ALLOW, "tgkill", seccomp.Arg(0, seccomp.EQ, os.getpid()))
        # flags of its own descriptors, never an owner, a signal, a lease or O_ASYNC (which make the
        # kernel signal another process of the same user when the parent writes to the pipe)
        for command in (F_GETFD, F_SETFD, F_GETFL):
            rules.add_rule(seccomp.ALLOW, "fcntl", seccomp.Arg(1, seccomp.EQ, command))
        rules.add_rule(seccomp.ALLOW, "fcntl", seccomp.Arg(1, seccomp.EQ, F_SETFL),
                       seccomp.Arg(2, seccomp.MASKED_EQ, O_ASYNC, 0))
        rules.load()
    except (OSError, RuntimeError, ValueError, AttributeError) as error:
        return f"unavailable ({type(error).__name__}: {error})"
    return "active"


def forbid_executable_memory() -> str:
    """The second stage, once the model is loaded and has run once on a batch of zeros at the one
    batch shape the child ever runs (``child.FixedShape``): no new executable memory (``mmap``,
    ``mprotect`` or ``pkey_mprotect`` with PROT_EXEC fail with EPERM), so a kernel bug a crafted
    graph reached on real images could not place code and run it. oneDNN writes its convolution
    kernels into such memory when it first meets a shape, which the warm-up did; refusing it from
    the start would turn oneDNN off and leave convolutions to ATen's much slower kernels
    (docs/submissions.md). Returns "active" or why not."""
    try:
        import pyseccomp as seccomp
    except ImportError:
        return "unavailable (pyseccomp is not installed)"
    try:
        rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)  # stacked on the allow-list: both apply
        rules.set_attr(seccomp.Attr.CTL_TSYNC, 1)
        rules.set_attr(seccomp.Attr.CTL_NNP, 0)  # set already, and prctl is refused now
        for name in ("mmap", "mprotect", "pkey_mprotect"):
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name,
                           seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, PROT_EXEC))
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "seccomp")  # the last filter
        rules.load()
    except (OSError, RuntimeError, ValueError, AttributeError) as error:
        return f"unavailable ({type(error).__name__}: {error})"
    return "active"


def lock_down(limits: Lockdown) -> dict[str, str]:
    """Apply every layer the machine supports; returns what was applied."""
    limit_resources(limits)
    privileges = "set" if no_new_privileges() else "unavailable"
    return {"rlimits": "set", "no_new_privs": privileges, "seccomp": install_seccomp(limits.gpu)}
