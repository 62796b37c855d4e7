"""Lock the sandbox process down before it reads a byte of a submitted model (Linux).

Three layers, applied by the child to itself (``ident3d.sandbox.child``):

1. resource limits: address space (the model's memory budget on top of what the warmed-up process
   already maps), CPU seconds, file size 0 (writing to any file kills the process with SIGXFSZ; the
   pipes to the parent are not files), no core dumps, a handful of open files;
2. ``PR_SET_NO_NEW_PRIVS``: nothing executed later can gain privileges;
3. a seccomp filter (libseccomp through ``pyseccomp``) that makes every call opening, creating,
   renaming or deleting a file, every socket call, ``execve``, ``fork`` and process tracing fail with
   EPERM. Threads stay allowed (``clone`` with ``CLONE_THREAD``), so torch keeps its thread pool.

Where seccomp is missing (no libseccomp, another kernel) layers 1 and 2 still apply, the model
still sees only image batches, and the reader's allow-list admits no file or socket operator;
``status()`` reports what was applied and the evaluator records it in the result.
"""

from __future__ import annotations

import ctypes
import errno
import resource
from dataclasses import dataclass

PR_SET_NO_NEW_PRIVS = 38
CLONE_THREAD = 0x00010000
DENIED = (
    "open", "openat", "openat2", "creat", "truncate", "rename", "renameat", "renameat2", "unlink",
    "unlinkat", "link", "linkat", "symlink", "symlinkat", "mkdir", "mkdirat", "rmdir", "mknod",
    "mknodat", "chmod", "fchmodat", "chown", "fchownat", "lchown", "chdir", "chroot", "mount",
    "umount2", "pivot_root", "unshare", "setns", "socket", "socketpair", "connect", "bind", "listen",
    "accept", "accept4", "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv",
    "process_vm_writev", "kill", "memfd_create", "io_uring_setup", "bpf", "perf_event_open",
    "userfaultfd", "name_to_handle_at", "open_by_handle_at", "keyctl", "add_key", "request_key",
)


@dataclass(frozen=True)
class Lockdown:
    memory_bytes: int
    cpu_seconds: int
    open_files: int = 64


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


def no_new_privileges() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0


def install_seccomp() -> str:
    """Load the filter; returns "active" or why not (the process then runs without it)."""
    try:
        import pyseccomp as seccomp
    except ImportError:
        return "unavailable (pyseccomp is not installed)"
    try:
        deny = seccomp.ERRNO(errno.EPERM)
        rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        for name in DENIED:
            try:
                rules.add_rule(deny, name)
            except (RuntimeError, ValueError, OSError):
                continue  # a call this architecture does not have
        # glibc falls back from clone3 to clone; clone is allowed for threads only
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
        rules.load()
    except (OSError, RuntimeError, ValueError, AttributeError) as error:
        return f"unavailable ({type(error).__name__}: {error})"
    return "active"


def lock_down(limits: Lockdown) -> dict[str, str]:
    """Apply every layer the machine supports; returns what was applied."""
    limit_resources(limits)
    privileges = "set" if no_new_privileges() else "unavailable"
    return {"rlimits": "set", "no_new_privs": privileges, "seccomp": install_seccomp()}
