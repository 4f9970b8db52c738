"""Forking the children of isolated steps that need one at the same moment with one fork of the kernel.

A fork costs the kernel more than itself: every page the kernel writes afterwards faults once (and is copied
while a child shares it), about 2,900 pages for each item of a map, on the kernel's own busy threads
(`bench/bench_isolated.py --map`). So the steps that wait for their child together (a map's items that
reached the model's code at about the same time) are forked at once: the kernel forks one wave process,
which forks each step's walled worker in turn and watches over them. The wave runs Nighthawk's code only,
never the model's; each worker starts in its own step's context and sees the values as they were when the
wave was forked, which is when its step asked for it. A step alone is forked straight from the kernel.

Each step of a wave talks to its worker through its own channel, as any isolated step does, and to the wave
through a status socket of its own: the step shuts it to have the worker killed (with everything it
started); the wave answers with the worker's exit code once it has reaped it, and removes its temporary
folder. The wave dies with the kernel's thread that forked it, and its workers with the wave; it ends when
its last worker has, and then the kernel removes whatever folder is left (`_reaping.py`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import gc
import os
import queue
import secrets
import select
import signal
import socket
import struct
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import NoReturn, Protocol

from ...threads._loop import run_as_user, user_thread_id
from .._kinds import Isolation
from .._oversee import forget_in_child
from ._channel import send_message
from ._descriptors import let_go_of_inherited
from ._folders import remove_folder
from ._reaping import reaper
from ._seccomp import compiled_filter
from ._tree import die_with_parent, ended_code, go_first_when_memory_runs_out, interrupts_held

__all__ = [
    "GATHER_SECONDS", "Forkable", "done", "fork", "fork_waiting", "gathered", "give_up", "temp_name", "unavailable", "wait_for_fork",
    "worker_exit",
]

GATHER_SECONDS = 0.1
"""How long after the kernel's last fork the next one waits, gathering the steps that ask meanwhile, when
other isolated steps of the same user thread are under way (a map's items). A step alone, or after the kernel has not forked for
that long, is forked at once."""
_STATUS = struct.Struct("!i")
"""The wave's word on a worker's end: its exit code (a signal `s` as `128 + s`)."""
_POLL_MS = 50
"""How often the wave looks for its workers' ends between its steps' words."""
_EXIT_WAIT_SECONDS = 2.0
"""How long a step waits for the wave's word on a worker that ended by itself."""


class Forkable(Protocol):
    """An isolated step's child, as the waves fork it (`_parent._Child`)."""

    isolation: Isolation
    temp_dir: str

    def fork_alone(self) -> None: ...

    def spawn(self, theirs: socket.socket, closing: Sequence[int]) -> tuple[int, bool]: ...

    def joined_wave(self, channel: socket.socket, status: socket.socket) -> None: ...

    def fork_failed(self, error: Exception) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True, kw_only=True)
class _Asked:
    """A child waiting for its fork: the step's context it starts in, and the thread that forks it."""

    child: Forkable
    context: contextvars.Context
    thread: int


_lock = threading.Lock()
_waiting: list[_Asked] = []
_under_way: dict[int, tuple[Forkable, int]] = {}
"""The children asked for and not yet closed, by `id`, with the thread that forks them."""
_last_fork = 0.0


_forking = threading.Lock()
"""Held by the one kernel thread forking now. Two threads' steps never fork at the same moment: some libraries
refuse a fork while another thread is in the middle of one (filelock's audit hook, on Python 3.12+)."""


def fork() -> int:
    """`os.fork`, one thread at a time."""
    with _forking, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the child uses none of theirs
        return os.fork()


def _forget() -> None:
    """In any fork of the kernel (the user's own too): the kernel's children are not this process's to end,
    and the locks, which another thread may have held at the fork, are new ones."""
    global _lock, _forking
    _lock, _forking = threading.Lock(), threading.Lock()
    _waiting.clear()
    _under_way.clear()


os.register_at_fork(after_in_child=_forget)


def temp_name() -> str:
    """A new private temporary folder's name: the child makes it, before its walls."""
    return os.path.join(tempfile.gettempdir(), f"nighthawk-isolated-{secrets.token_hex(8)}")


def unavailable(reason: object, step_id: str) -> str:
    return (
        f"the walls of an isolated step cannot be raised here: {reason}; the step at {step_id} ran none of the "
        "model's code (nothing falls back to running unwalled)"
    )


def wait_for_fork(child: Forkable) -> None:
    """On the step's loop, in the step's context: `child` is forked by the next `fork_waiting` on the thread
    that serves the step's user code, with that thread's other children waiting then."""
    asked = _Asked(child=child, context=contextvars.copy_context(), thread=user_thread_id())
    with _lock:
        _waiting.append(asked)
        _under_way[id(child)] = (child, asked.thread)


def give_up(child: Forkable) -> None:
    """The step no longer waits for its child (it was cancelled before the fork)."""
    with _lock:
        _waiting[:] = [asked for asked in _waiting if asked.child is not child]


def done(child: Forkable) -> None:
    """The step closed its child (or never had it forked)."""
    with _lock:
        _under_way.pop(id(child), None)


async def gathered() -> None:
    """On the step's loop, once waiting: while other isolated steps of the same user thread are under way,
    let those that ask soon after the kernel's last fork join one wave. A fork costs the kernel ~12 ms of faults on its busy threads;
    a model's round, hundreds of milliseconds."""
    delay = _last_fork + GATHER_SECONDS - time.monotonic()
    if delay > 0:
        thread = user_thread_id()
        with _lock:
            others = sum(forker == thread for _, forker in _under_way.values()) > 1  # a wave is one thread's
        if others:
            await asyncio.sleep(delay)


def fork_waiting() -> None:
    """On a step's user thread: fork the children waiting for this thread, alone or in one wave. What fails
    is handed to each child (`fork_failed`): the call that forks a child may be another step's. An interrupt
    meanwhile is raised once every child taken is forked or told why not."""
    global _last_fork
    with interrupts_held():
        thread = threading.get_ident()
        with _lock:
            batch = [asked for asked in _waiting if asked.thread == thread]
            _waiting[:] = [asked for asked in _waiting if asked.thread != thread]
        if batch:
            _last_fork = time.monotonic()
        if len(batch) == 1:
            try:
                run_as_user(batch[0].context, batch[0].child.fork_alone)
            except Exception as exc:  # noqa: BLE001 - the child's own step raises it
                batch[0].child.fork_failed(exc)
        elif batch:
            _fork_wave(batch)


async def worker_exit(status: socket.socket) -> int | None:
    """In the kernel: how a wave's worker ended, as the wave tells it once it has reaped it (`None` when the
    wave says nothing: it was killed, or took too long)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(_EXIT_WAIT_SECONDS):
            said = await loop.sock_recv(status, _STATUS.size)
    except (TimeoutError, OSError):
        return None
    return _STATUS.unpack(said)[0] if len(said) == _STATUS.size else None


@dataclass(frozen=True, kw_only=True)
class _Member:
    """One step of a wave: its child, and both ends of its channel and of its status socket."""

    asked: _Asked
    ours: socket.socket
    theirs: socket.socket
    status_ours: socket.socket
    status_theirs: socket.socket

    def ends(self) -> tuple[socket.socket, ...]:
        return self.ours, self.theirs, self.status_ours, self.status_theirs


def _fork_wave(batch: list[_Asked]) -> None:
    # Loaded here, not in the wave: an import in a fork can wait for ever on a lock another thread held. (And
    # only once isolation is known to run here: the walls' modules reach Linux's own calls as they load.)
    from ._child import run_child  # noqa: F401

    members: list[_Member] = []
    kernel = os.getpid()
    try:
        for asked in batch:
            compiled_filter(network=asked.child.isolation.network)  # built in the kernel: the workers install it
            asked.child.temp_dir = temp_name()
            ours, theirs = socket.socketpair()
            try:
                status_ours, status_theirs = socket.socketpair()
            except OSError:
                ours.close()
                theirs.close()
                raise
            members.append(_Member(asked=asked, ours=ours, theirs=theirs, status_ours=status_ours, status_theirs=status_theirs))
        pid = fork()
    except Exception as exc:  # noqa: BLE001 - each step raises it as its own
        for member in members:
            for end in member.ends():
                end.close()
        for asked in batch:
            asked.child.fork_failed(exc)
        return
    if pid == 0:  # pragma: no cover - the wave; it never returns
        try:
            _wave(members, kernel)
        finally:
            os._exit(70)
    with contextlib.suppress(RuntimeError):  # no thread at all to be had: the wave stays unreaped until the exit
        reaper.await_wave(pid, [member.asked.child.temp_dir for member in members])
    for member in members:
        member.theirs.close()
        member.status_theirs.close()
        member.ours.setblocking(False)  # read on the step's loop
        member.status_ours.setblocking(False)
        member.asked.child.joined_wave(member.ours, member.status_ours)


def _end_under_way() -> None:
    """At the interpreter's exit: end the children of steps still under way (a map on a thread that is not
    waited for), so that their waves end and their folders are removed before the reaper's last wait."""
    with _lock:
        children = [child for child, _ in _under_way.values()]
    for child in children:
        with contextlib.suppress(Exception):
            child.close()


atexit.register(_end_under_way)  # after `_reaping`'s: it runs first


# --- the wave process --------------------------------------------------------------------------------------


def _wave(members: list[_Member], kernel: int) -> NoReturn:
    """The wave's whole life: fork each worker, then kill those their steps ended, reap them all, report."""
    die_with_parent()
    if os.getppid() != kernel:
        os._exit(0)  # the kernel ended before the wave could die with it
    with contextlib.suppress(OSError):  # its workers set theirs too
        go_first_when_memory_runs_out()
    forget_in_child()  # what the kernel's threads had in force is not the wave's (their ids are reused here)
    # The kernel's Ctrl-C may reach its whole process group: its steps end their workers, not the signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # what the kernel had is never garbage here: a collection would copy every page it touched
    from ._shared_memory import make_shared_memory_private  # loaded with `_child`, in the kernel, by `_fork_wave`

    with contextlib.suppress(OSError):  # each worker tries again, and tells its step what failed
        make_shared_memory_private()  # once for every worker, which inherits its memory private
    let_go_of_inherited({end.fileno() for member in members for end in (member.theirs, member.status_theirs)})
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
            pid, grouped = run_as_user(member.asked.context, partial(member.asked.child.spawn, member.theirs, closing))
        except BaseException as exc:  # noqa: BLE001 - told to the step, which raises it; the others go on
            with contextlib.suppress(OSError):
                send_message(member.theirs, ("unavailable", str(exc)))
            member.status_theirs.close()
        else:
            workers[pid] = (member, grouped)
        member.theirs.close()
    remover = _Remover()  # started only now: each worker is forked from the wave's one thread
    _watch(workers, remover)
    remover.finish()
    os._exit(0)


class _Remover:
    """A thread of the wave that removes each reaped worker's folder, so that a large one (the model's code
    chooses its size) never holds up the killing of the others. The kernel removes what is left once the
    wave has ended (`_reaping.py`)."""

    def __init__(self) -> None:
        self._folders: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = threading.Thread(target=self._serve, daemon=True)
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had: the kernel removes the folders once the wave has ended
            self._thread = None

    def remove(self, folder: str) -> None:
        if self._thread is not None:
            self._folders.put(folder)

    def finish(self) -> None:
        if self._thread is not None:
            self._folders.put(None)
            self._thread.join()

    def _serve(self) -> None:
        while (folder := self._folders.get()) is not None:
            with contextlib.suppress(BaseException):  # a folder left is the kernel's to remove, not a reason to stop
                remove_folder(folder)


def _watch(workers: dict[int, tuple[_Member, bool]], remover: _Remover) -> None:
    """Until every worker is reaped: kill a worker (and its tree) as soon as its step shuts its status socket,
    and tell each step how its worker ended."""
    poller = select.poll()
    listening: dict[int, int] = {}  # a status socket's descriptor: its worker
    for pid, (member, _) in workers.items():
        poller.register(member.status_theirs.fileno(), select.POLLIN)
        listening[member.status_theirs.fileno()] = pid
    while workers:
        for fd, _ in poller.poll(_POLL_MS):
            poller.unregister(fd)  # a step says one thing only: it shut the socket (or closed it)
            pid = listening.pop(fd)
            if pid in workers:
                _kill(pid, grouped=workers[pid][1])
        _reap(workers, poller, listening, remover)


def _reap(workers: dict[int, tuple[_Member, bool]], poller: select.poll, listening: dict[int, int], remover: _Remover) -> None:
    """Reap the workers that ended, tell each one's step its exit code, and have its folder removed."""
    while workers:
        try:
            pid, wait_status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            workers.clear()
            return
        if pid == 0:
            return
        if (entry := workers.pop(pid, None)) is None:
            continue
        status = entry[0].status_theirs
        if listening.pop(status.fileno(), None) is not None:
            poller.unregister(status.fileno())
        with contextlib.suppress(OSError):  # the step closed it already
            status.sendall(_STATUS.pack(ended_code(wait_status, usage, entry[0].asked.child.isolation.cpu_seconds)))
        status.close()
        remover.remove(entry[0].asked.child.temp_dir)


def _kill(pid: int, *, grouped: bool) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
        if grouped:
            os.killpg(pid, signal.SIGKILL)  # the worker leads a group nothing it starts may leave
