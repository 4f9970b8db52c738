"""The isolated child's process tree: a pid namespace of its own, with a bounded number of processes.

The worker that runs the model's code is the init (pid 1) of a pid namespace of its own, and bounds its
pids (`pid_max` is per namespace since Linux 6.14). As root the kernel's thread forks it straight into the
namespace; otherwise a forked "keeper" makes a user and pid namespace and forks the worker into them. Inside the namespace no process outside it can be named, so none can be
signalled; a fork bomb stops at the bound; when the worker ends, the kernel kills everything left in the
namespace. The worker dies with its parent (`PR_SET_PDEATHSIG`), so the kernel ends the whole tree by
killing its own child; a keeper passes the worker's status on as its exit code (a signal `s` as `128 + s`).
As init, the worker ignores the signals it sends itself; the seccomp filter ends it on a SIGKILL it sends
itself instead, so that the step says so. Each fork of the kernel's size costs its page tables: one as root.

`RLIMIT_NPROC` would not do: the kernel does not enforce it for root.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["PID_MAX_PER_NAMESPACE", "die_with_parent", "ended_code", "enter_tree", "forking_into_namespace", "go_first_when_memory_runs_out", "interrupts_held", "release_interrupts_in_child"]

_CLONE_NEWUSER, _CLONE_NEWPID = 0x10000000, 0x20000000
_PR_SET_PDEATHSIG = 1
PID_MAX_PER_NAMESPACE = (6, 14)
"""The first Linux release whose `pid_max` belongs to each pid namespace (before it, to the whole host)."""
_RESERVED_PIDS = 300
"""The kernel's least `pid_max`."""
_libc = ctypes.CDLL(None, use_errno=True)


def ended_code(status: int, usage: resource.struct_rusage, cpu_seconds: int) -> int:
    """A wait status as an exit code: the code, or `128 + signal`. As init, the worker ignores the SIGXCPU of
    its CPU-time limit and the limit's SIGKILL follows: told apart by the CPU time it used, as SIGXCPU."""
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    if os.WTERMSIG(status) == signal.SIGKILL and usage.ru_utime + usage.ru_stime >= cpu_seconds:
        return 128 + signal.SIGXCPU
    return 128 + os.WTERMSIG(status)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold SIGINT off the fork: an interrupt there could leave the kernel's thread (and every process it
    starts after) in the child's pid namespace, or let the forked child climb the kernel's stack unwalled.
    The signal is blocked for this thread (and so for the child until it unblocks it) and, on the main
    thread, Python's handler (which runs there whichever thread took the signal) only notes it: the signal
    is raised again at the end, in the kernel, once the child is recorded and the namespace restored."""
    held: list[int] = []
    on_main = threading.current_thread() is threading.main_thread()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, lambda signum, _: held.append(signum)) if on_main else None
    try:
        yield
    finally:
        if on_main:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one aimed at this thread is delivered now
        if held:
            signal.raise_signal(signal.SIGINT)


def release_interrupts_in_child() -> None:
    """In the forked child, first: Ctrl-C ends it like any process, and the kernel's handler is not its."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def forking_into_namespace() -> Callable[[], None] | None:
    """In the kernel, as root: the children this thread forks next are the inits of a new pid namespace, so
    the worker is forked at once, without a keeper. Returns what to call in the parent right after the fork
    (the thread's children go back to the kernel's namespace); `None` when not root, where the keeper makes
    the namespace (a user namespace too, which a process with threads cannot enter).

    Raises:
        OSError: The namespace cannot be made here.
    """
    if os.geteuid() != 0:
        return None
    original = os.open("/proc/thread-self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    if _libc.unshare(_CLONE_NEWPID) != 0:
        number = ctypes.get_errno()
        os.close(original)
        raise OSError(number, f"a pid namespace (unshare) is not permitted here: {os.strerror(number)}")

    def restore() -> None:
        try:
            if _libc.setns(original, _CLONE_NEWPID) != 0:
                # Every process this thread started from now on would be the init of a namespace: never go on.
                raise SystemError(f"setns back to the kernel's pid namespace failed: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(original)

    return restore


def enter_tree(channel: socket.socket, processes: int, cpu_seconds: int, *, forked_into_namespace: bool) -> None:
    """In the forked child: make the namespace unless it was forked into one (the keeper forks the worker
    and stays to wait for it), then bound its processes. Returns in the worker only.

    Raises:
        OSError: The namespace or its bound cannot be made here (the message says which).
    """
    die_with_parent()
    go_first_when_memory_runs_out()
    if not forked_into_namespace:
        uid, gid = os.geteuid(), os.getegid()
        if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"a user and pid namespace (unshare) is not permitted here: {os.strerror(number)}")
        _write("/proc/self/setgroups", "deny")  # stay the same user inside the user namespace
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        worker = os.fork()
        if worker:
            _wait_and_exit(channel, worker, cpu_seconds)
        die_with_parent()
    try:
        # Pids count from 1, the worker's. The kernel takes no less than its reserved pids + 1.
        _write("/proc/sys/kernel/pid_max", str(max(processes + 1, _RESERVED_PIDS + 1)))
    except OSError as exc:
        raise OSError(exc.errno, f"the namespace's process bound (pid_max, Linux 6.14+) cannot be set: {exc.strerror}") from None


def _wait_and_exit(channel: socket.socket, worker: int, cpu_seconds: int) -> None:
    """The keeper: wait for the worker and exit with its status."""
    channel.close()  # the worker alone holds the channel: its end is the kernel's sign that it ended
    try:
        _, status, usage = os.wait4(worker, 0)
    except ChildProcessError:
        os._exit(70)
    os._exit(ended_code(status, usage, cpu_seconds))


def die_with_parent() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def go_first_when_memory_runs_out() -> None:
    """Be the process the kernel's out-of-memory killer ends first (and so every process this one starts): a
    child counts the kernel's pages it shares as its own, so it would otherwise weigh no more than the notebook.

    Raises:
        OSError: The score cannot be set here.
    """
    _write("/proc/self/oom_score_adj", "1000")  # raising it needs no privilege


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
