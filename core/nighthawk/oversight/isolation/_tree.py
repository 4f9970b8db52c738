"""The isolated child's process tree: a pid namespace of its own, with a bounded number of processes.

The forked child (the "keeper", in the kernel's namespace) makes a pid namespace and forks the worker that
runs the model's code: the namespace's init (pid 1 there), which bounds the namespace's pids (`pid_max` is
per namespace since Linux 6.14). Inside the namespace no process outside it can be named, so none can be
signalled; a fork bomb stops at the bound; when the worker ends, the kernel kills everything left in the
namespace. The worker dies with the keeper (`PR_SET_PDEATHSIG`), so the kernel ends the whole tree by
killing the keeper, which passes the worker's status on as its exit code (a signal `s` as `128 + s`). As
init, the worker ignores the signals it sends itself; the seccomp filter ends it on a SIGKILL it sends
itself instead, so that the step says so. Two forks, not three: each costs the kernel's page tables.

`RLIMIT_NPROC` would not do: the kernel does not enforce it for root.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket

__all__ = ["enter_tree", "exit_code"]

_CLONE_NEWUSER, _CLONE_NEWPID = 0x10000000, 0x20000000
_PR_SET_PDEATHSIG = 1
_RESERVED_PIDS = 300
"""The kernel's least `pid_max`."""


def exit_code(status: int) -> int:
    """A wait status as an exit code: the code, or `128 + signal`."""
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)


def enter_tree(channel: socket.socket, processes: int, cpu_seconds: int) -> None:
    """From the keeper: make the namespace; returns in the worker only (the others wait and exit).

    Raises:
        OSError: The namespace or its bound cannot be made here (the message says which).
    """
    _die_with_parent()
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWPID if uid == 0 else _CLONE_NEWUSER | _CLONE_NEWPID
    if libc.unshare(flags) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"a pid namespace (unshare) is not permitted here: {os.strerror(number)}")
    if uid != 0:  # stay the same user inside the user namespace
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    worker = os.fork()
    if worker:
        _wait_and_exit(channel, worker, cpu_seconds)
    _die_with_parent()
    try:
        # Pids count from 1, the worker's. The kernel takes no less than its reserved pids + 1.
        _write("/proc/sys/kernel/pid_max", str(max(processes + 1, _RESERVED_PIDS + 1)))
    except OSError as exc:
        raise OSError(exc.errno, f"the namespace's process bound (pid_max, Linux 6.14+) cannot be set: {exc.strerror}") from None


def _wait_and_exit(channel: socket.socket, worker: int, cpu_seconds: int) -> None:
    """Wait for the worker and exit with its status. As init it ignores the SIGXCPU of its CPU-time limit, and
    the limit's SIGKILL follows: told apart here by the CPU time it used, and passed on as SIGXCPU."""
    channel.close()  # the worker alone holds the channel: its end is the kernel's sign that it ended
    try:
        _, status, usage = os.wait4(worker, 0)
    except ChildProcessError:
        os._exit(70)
    code = exit_code(status)
    if code == 128 + signal.SIGKILL and usage.ru_utime + usage.ru_stime >= cpu_seconds:
        code = 128 + signal.SIGXCPU
    os._exit(code)


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
