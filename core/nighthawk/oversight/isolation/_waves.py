"""Forking the children of isolated steps that need one at the same moment with one fork of the kernel.

A fork costs the kernel more than itself: every page the kernel writes afterwards faults once (and is copied
while a child shares it), about 2,900 pages for each item of a map, all on the kernel's own busy thread
(`bench/bench_isolated.py --map`). So the steps that wait for their child together (a map's items that
reached the model's code while the user's thread was busy) are forked at once: the kernel forks one wave
process, which forks each step's walled worker in turn and watches over them. The wave runs Nighthawk's
code only, never the model's, and each worker sees the values as they were when the wave was forked, which
is when its step asked for it. A step alone is forked as before, straight from the kernel.

Each step of a wave talks to its worker through its own channel, as any isolated step does, and to the wave
through a status socket of its own: the step shuts it to have the worker killed (with everything it
started); the wave answers with the worker's exit code once it has reaped it, and removes its temporary
folder. The wave dies with the kernel and its workers with the wave; it ends when its last worker has.
"""

from __future__ import annotations

import asyncio
import gc
import os
import secrets
import select
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn, Protocol

from .._kinds import Isolation
from ._channel import send_message
from ._reaping import reaper
from ._seccomp import compiled_filter
from ._tree import die_with_parent, ended_code, interrupts_held

__all__ = [
    "GATHER_SECONDS", "Forkable", "done", "fork_waiting", "gathered", "give_up", "temp_name", "unavailable", "wait_for_fork",
    "worker_exit",
]

_STATUS = struct.Struct("!i")
"""The wave's word on a worker's end: its exit code (a signal `s` as `128 + s`)."""
_POLL_SECONDS = 0.05
"""How often the wave looks for its workers' ends between its steps' words."""


class Forkable(Protocol):
    """An isolated step's child, as the waves fork it (`_parent._Child`)."""

    isolation: Isolation
    temp_dir: str

    def fork_alone(self) -> None: ...

    def spawn(self, theirs: socket.socket, closing: Sequence[int]) -> tuple[int, bool]: ...

    def joined_wave(self, channel: socket.socket, status: socket.socket) -> None: ...

    def fork_failed(self, error: Exception) -> None: ...


GATHER_SECONDS = 0.1
"""How long after the kernel's last fork the next one waits, gathering the steps that ask meanwhile, when
other isolated steps are under way (a map's items). A step alone, or after the kernel has not forked for
that long, is forked at once."""

_lock = threading.Lock()
_waiting: list[Forkable] = []
_under_way: set[int] = set()
"""The ids of the children asked for and not yet closed."""
_last_fork = 0.0


def temp_name() -> str:
    """A new private temporary folder's name: the child makes it, before its walls."""
    return os.path.join(tempfile.gettempdir(), f"nighthawk-isolated-{secrets.token_hex(8)}")


def unavailable(reason: object, step_id: str) -> str:
    return (
        f"the walls of an isolated step cannot be raised here: {reason}; the step at {step_id} ran none of the "
        "model's code (nothing falls back to running unwalled)"
    )


def wait_for_fork(child: Forkable) -> None:
    """On the step's loop: `child` is forked by the next `fork_waiting`, with the others waiting then."""
    with _lock:
        _waiting.append(child)
        _under_way.add(id(child))


def done(child: Forkable) -> None:
    """The step closed its child (or never had it forked)."""
    with _lock:
        _under_way.discard(id(child))


async def gathered() -> None:
    """On the step's loop, once waiting: while other isolated steps are under way, let those that ask soon
    after the kernel's last fork join one wave. A fork costs the kernel ~12 ms of faults on its busy threads
    (`bench/bench_isolated.py --map`); a model's round, hundreds of milliseconds."""
    delay = _last_fork + GATHER_SECONDS - time.monotonic()
    if delay > 0 and len(_under_way) > 1:
        await asyncio.sleep(delay)


def give_up(child: Forkable) -> None:
    """The step no longer wants its child (it was cancelled before the fork)."""
    with _lock:
        if child in _waiting:
            _waiting.remove(child)


async def worker_exit(status: socket.socket) -> int | None:
    """In the kernel: how a wave's worker ended, as the wave tells it once it has reaped it (`None` when the
    wave says nothing within a few of its rounds)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(40 * _POLL_SECONDS):
            said = await loop.sock_recv(status, _STATUS.size)
    except (TimeoutError, OSError):
        return None
    return _STATUS.unpack(said)[0] if len(said) == _STATUS.size else None


def fork_waiting() -> None:
    """On the user's thread: fork every child waiting now, alone or in one wave. What fails is handed to
    each child (`fork_failed`): the call that forks a child may be another step's."""
    global _last_fork
    with _lock:
        batch = list(_waiting)
        _waiting.clear()
    if batch:
        _last_fork = time.monotonic()
    if len(batch) == 1:
        try:
            batch[0].fork_alone()
        except Exception as exc:  # noqa: BLE001 - the child's own step raises it
            batch[0].fork_failed(exc)
    elif batch:
        _fork_wave(batch)


@dataclass(frozen=True, kw_only=True)
class _Member:
    """One step of a wave: its child, and both ends of its channel and of its status socket."""

    child: Forkable
    ours: socket.socket
    theirs: socket.socket
    status_ours: socket.socket
    status_theirs: socket.socket


def _fork_wave(batch: list[Forkable]) -> None:
    members = []
    for child in batch:
        compiled_filter(network=child.isolation.network)  # built in the kernel, once: the workers install it
        child.temp_dir = temp_name()
        ours, theirs = socket.socketpair()
        status_ours, status_theirs = socket.socketpair()
        members.append(_Member(child=child, ours=ours, theirs=theirs, status_ours=status_ours, status_theirs=status_theirs))
    kernel = os.getpid()
    with interrupts_held():  # an interrupt is raised once the wave is recorded
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the wave uses none of theirs
                pid = os.fork()
        except OSError as exc:
            for member in members:
                for end in (member.ours, member.theirs, member.status_ours, member.status_theirs):
                    end.close()
                member.child.fork_failed(exc)
            return
        if pid == 0:  # pragma: no cover - the wave; it never returns
            try:
                _wave(members, kernel)
            finally:
                os._exit(70)
    reaper.await_wave(pid)
    for member in members:
        member.theirs.close()
        member.status_theirs.close()
        member.ours.setblocking(False)  # read on the step's loop
        member.status_ours.setblocking(False)
        member.child.joined_wave(member.ours, member.status_ours)


# --- the wave process --------------------------------------------------------------------------------------


def _wave(members: list[_Member], kernel: int) -> NoReturn:
    """The wave's whole life: fork each worker, then reap them, kill those their steps ended, and report."""
    die_with_parent()
    if os.getppid() != kernel:
        os._exit(0)  # the kernel ended before the wave could die with it
    # The kernel's Ctrl-C may reach its whole process group: its steps end their workers, not the signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # what the kernel had is never garbage here: a collection would copy every page it touched
    keep = {end.fileno() for member in members for end in (member.theirs, member.status_theirs)}
    _let_go_of_the_kernels_descriptors(keep)
    for member in members:
        member.ours.close()
        member.status_ours.close()
    workers: dict[int, tuple[_Member, bool]] = {}
    for member in members:
        # The worker keeps its own channel only: a copy of another's would hide that one's end from the kernel.
        closing = [
            end.fileno() for other in members for end in (other.theirs, other.status_theirs)
            if end is not member.theirs and end.fileno() >= 0
        ]
        try:
            pid, grouped = member.child.spawn(member.theirs, closing)
        except OSError as exc:
            send_message(member.theirs, ("unavailable", str(exc)))
            member.status_theirs.close()
        else:
            workers[pid] = (member, grouped)
        member.theirs.close()
    _watch(workers)
    os._exit(0)


def _let_go_of_the_kernels_descriptors(keep: set[int]) -> None:
    """Point every descriptor the wave inherited but `keep` at /dev/null: a copy held here would keep the
    kernel's connections and pipes open after the kernel closed them. (Not closed: the kernel's objects here
    would close or write to whatever took their numbers next.)"""
    devnull = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep and fd != devnull:
            try:
                os.dup2(devnull, fd)
            except OSError:
                pass  # the listing's own descriptor, closed already
    os.close(devnull)


def _watch(workers: dict[int, tuple[_Member, bool]]) -> None:
    """Until every worker is reaped: kill a worker whose step shut its status socket, and tell each step
    how its worker ended."""
    asked: set[int] = set()
    while workers:
        listening = {member.status_theirs: pid for pid, (member, _) in workers.items() if pid not in asked}
        readable, _, _ = select.select(list(listening), [], [], _POLL_SECONDS)
        for status in readable:
            try:
                said = status.recv(16)
            except OSError:
                said = b""
            if not said:  # the step shut it: end the worker and everything it started
                pid = listening[status]
                asked.add(pid)
                _kill(pid, grouped=workers[pid][1])
        while workers:
            try:
                pid, wait_status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                break
            if (entry := workers.pop(pid, None)) is not None:
                member, _ = entry
                try:
                    member.status_theirs.sendall(_STATUS.pack(ended_code(wait_status, usage, member.child.isolation.cpu_seconds)))
                except OSError:
                    pass  # the step closed it already
                member.status_theirs.close()
                shutil.rmtree(member.child.temp_dir, ignore_errors=True)


def _kill(pid: int, *, grouped: bool) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        if grouped:
            os.killpg(pid, signal.SIGKILL)  # the worker leads a group nothing it starts may leave
    except ProcessLookupError:
        pass
