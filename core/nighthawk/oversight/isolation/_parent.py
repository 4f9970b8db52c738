"""The kernel's side of an isolated step: fork the child at the step's first call of model code, ask it for
each call, read its answers as untrusted data, and end it (and all it started) with the step.

The child is forked on the user's thread, alone or with the others that wait at that moment (`_waves.py`); its answers are awaited on the step's loop, so that the user's
thread stays free for the other items of a map. An interrupt (Ctrl-C) or the step's wall-time budget
cancels that wait, which kills the child before it lets the cancellation go on. A child that ends, crashes
or is killed ends the step with `IsolationError`; the kernel's namespace is never touched by what the
child did. The step's end kills the child and everything it started at once; a reaper thread (or the
wave) then waits while the operating system tears the child's memory down, and removes its temporary
folder, so that neither the step nor a map's other items wait for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from ...errors import ExecutionError, IsolationError, IsolationUnavailableError, StepAbortedError
from ...step._boundary import ToolBoundaryError
from ...step._context import StepContext
from ...threads._deadline import bounded_by
from ...threads._loop import on_user_thread
from .._kinds import Isolation
from . import _sessions, _waves
from ._channel import ChannelClosed, OversizedMessage, frame, read_frame
from ._folders import remove_folder
from ._landlock import MINIMUM_ABI, abi_version
from ._output import LeftOutput, relay
from ._reaping import reaper
from ._seccomp import SUPPORTED, compiled_filter
from ._tree import PID_MAX_PER_NAMESPACE, ended_code, forking_into_namespace, release_interrupts_in_child
from ._values import UnsafeValueError, unpickle_data
from ._waves import temp_name, unavailable

__all__ = ["isolating"]

_READY_SECONDS = 30.0
"""How long the child may take to raise its walls before the step gives up on it."""


@asynccontextmanager
async def isolating(step: StepContext, isolation: Isolation, step_code: _sessions.StepCode) -> AsyncIterator[None]:
    """Run `step`'s model code in a walled child inside the `with` block; the child ends with the block.

    Raises:
        IsolationUnavailableError: The walls cannot be raised here (the message says what is missing).
    """
    missing = _missing()
    if missing is not None:
        raise IsolationUnavailableError(f"{missing}; the step at {step.step_id} was not run (nothing falls back to running unwalled)")
    session = _Child(step, isolation, step_code)
    _sessions.register(step, session)
    try:
        yield
    finally:
        await _sessions.end(step)


def _missing() -> str | None:
    """What this system lacks for the walls, or `None`."""
    if not sys.platform.startswith("linux"):
        return f"isolated steps need Linux (Landlock and seccomp); this is {sys.platform}"
    release = os.uname().release
    if tuple(int(part) for part in re.findall(r"\d+", release)[:2]) < PID_MAX_PER_NAMESPACE:
        # Before it `pid_max` is the host's own: the worker, as root, would lower it for every process.
        return f"isolated steps need Linux 6.14 or later (where each pid namespace has its own pid_max); this kernel is {release}"
    if not SUPPORTED:
        return "isolated steps know the seccomp system call numbers of x86-64 only"
    abi = abi_version()
    if abi < MINIMUM_ABI:
        found = "no Landlock (turned off, or a kernel before 5.13)" if abi == 0 else f"Landlock ABI {abi}"
        return f"isolated steps need Landlock ABI {MINIMUM_ABI} or later (Linux 6.2+); this kernel offers {found}"
    return None


class _Child:
    """One isolated step's child: forked at the step's first call of model code, not at its start, so that
    a map's items waiting for the model hold no process (each would make the kernel copy the pages it
    writes while the child shares them). It sees the values as the model's code would have in the kernel."""

    def __init__(self, step: StepContext, isolation: Isolation, step_code: _sessions.StepCode) -> None:
        self.step, self.isolation, self.step_code = step, isolation, step_code
        self.forked: _Alone | _InWave | None = None
        """Who forked the child, and so who kills and reaps it: the kernel itself, or a wave (`_waves.py`)."""
        self.channel = socket.socket()  # a placeholder, closed, until the fork
        self.channel.close()
        self.temp_dir = ""
        self.code: int | None = None
        """How the child ended, as an exit code (a signal `s` as `128 + s`), when it ended by itself during the
        step; a child the step kills is reaped off the step's path, and its code is not kept."""
        self.walled = False
        self.left_output: LeftOutput | None = None
        """The kernel's own hold on the walled child's output files (`_output.py`)."""
        self.fork_error: Exception | None = None
        self.closed = False
        self._forking = threading.Lock()
        """Taken by the fork's end (on the user's thread) and by `close` (on the step's loop), so that a step
        cancelled while its child was being forked still ends it."""

    # --- the fork (`_waves.py` forks this child alone or in a wave) ------------------------------------

    def fork_alone(self) -> None:
        """Fork the child straight from the kernel (on the user's thread, whose values it sees)."""
        compiled_filter(network=self.isolation.network)  # built here, once: the child only installs it
        ours, theirs = socket.socketpair()
        # Named here, made by the child before its walls: the kernel's thread, which every item of a map
        # shares, spends no time on it.
        self.temp_dir = temp_name()
        # (`fork_waiting` holds interrupts off: one is raised once the child is recorded and the namespace restored.)
        try:
            pid, grouped = self.spawn(theirs, (ours.fileno(),))
        except OSError as exc:
            ours.close()
            theirs.close()
            raise IsolationUnavailableError(unavailable(exc, self.step.step_id)) from None
        theirs.close()
        ours.setblocking(False)  # read on the step's loop
        with self._forking:
            self.channel = ours
            self.forked = _Alone(pid, grouped=grouped, temp_dir=self.temp_dir, cpu_seconds=self.isolation.cpu_seconds)
            late = self.closed
        if late:
            self.close()

    def joined_wave(self, channel: socket.socket, status: socket.socket) -> None:
        with self._forking:
            self.channel, self.forked = channel, _InWave(status)
            late = self.closed
        if late:
            self.close()

    def fork_failed(self, error: Exception) -> None:
        self.fork_error = error if isinstance(error, IsolationUnavailableError) else IsolationUnavailableError(
            unavailable(error, self.step.step_id)
        )

    def spawn(self, theirs: socket.socket, closing: Sequence[int]) -> tuple[int, bool]:
        """Fork the walled worker that serves the step through `theirs`, in the kernel or in a wave; it first
        closes the descriptors of `closing`. Returns its pid and whether it leads its own process group.

        Raises:
            OSError: The worker or its namespace cannot be made here.
        """
        from ._child import run_child  # here: the walls' modules load with the first fork

        restore = forking_into_namespace()
        pid = -1
        try:
            pid = _waves.fork()
            if pid == 0:  # pragma: no cover - the worker; it never returns
                try:
                    release_interrupts_in_child()
                    for fd in closing:
                        os.close(fd)
                    run_child(self.step, self.step_code, theirs, self.isolation, self.temp_dir, forked_into_namespace=restore is not None)
                finally:
                    os._exit(70)
        finally:
            if restore is not None and pid != 0:
                restore()  # in the kernel (or the wave) only, however the fork went: its thread's children are its own again
        return pid, restore is not None

    # --- the step's calls -------------------------------------------------------------------------------

    async def tool(self, tool_name: str, arguments: Mapping[str, object]) -> _sessions.Rendered:
        answer = await self._ask(("tool", tool_name, dict(arguments)), f"{tool_name} {arguments.get('expression')!r:.200}")
        match answer:
            case ("rendered", str(envelope), str(preview), bool(awaited), dict(writes)):
                if writes:  # rebuilt and validated on the user's thread: the validators are the user's code
                    values = await on_user_thread(lambda: self.step.validate_bindings(self._values(writes)))
                    self.step.step_locals.update(values)
                return _sessions.Rendered(envelope=envelope, preview=preview, awaited=awaited)
            case ("tool_error", str(kind), str(message), str(guidance)):
                raise ToolBoundaryError(kind, message, guidance)  # type: ignore[arg-type]
        raise self._unexpected(answer)

    async def returned(self, outcome: object) -> tuple[object, dict[str, object], bool]:
        expression = getattr(outcome, "return_expression", "")
        answer = await self._ask(("return", outcome), f"the return expression {expression!r:.200}")
        match answer:
            case ("returned", bytes(value), dict(writes), bool(awaited)):
                try:
                    return await on_user_thread(lambda: (self._value("the return value", value), self._values(writes), awaited))
                except ToolBoundaryError as refused:  # as a return expression that fails in the kernel says it
                    raise ExecutionError(f"`return_expression` {expression!r:.300}: {refused.message}") from refused
            case ("tool_error", _, str(message), _):
                raise ExecutionError(f"`return_expression` {expression!r:.300}: {message}")
        raise self._unexpected(answer)

    def _values(self, writes: dict[object, object]) -> dict[str, object]:
        return {str(name): self._value(f"`{name}`", data) for name, data in writes.items()}

    def _value(self, what: str, data: object) -> object:
        """Unpickle one value the child sent, as untrusted data."""
        if not isinstance(data, bytes):
            raise self._unexpected(data)
        try:
            return unpickle_data(data)
        except UnsafeValueError as exc:
            raise ToolBoundaryError(
                "execution", f"{what} was refused on its way back from the isolated child: {exc}",
                "Bind plain data (numbers, text, containers, arrays, DataFrames, the notebook's own classes).",
            ) from exc

    def _unexpected(self, answer: object) -> BaseException:
        match answer:
            case ("aborted", str(message)):
                return StepAbortedError(message)
            case ("failed", str(kind), str(message)):
                return ExecutionError(message if kind == "ExecutionError" else f"{kind}: {message}")
        self.kill()
        return IsolationError(f"the isolated child of the step at {self.step.step_id} answered nonsense ({type(answer).__name__}); it was ended")

    # --- the channel ----------------------------------------------------------------------------------

    async def _ask(self, request: tuple[Any, ...], doing: str) -> Any:
        """Send a request and wait for its answer on the step's loop, leaving the user's thread free (the
        other items of a map run their code there meanwhile). A cancellation (Ctrl-C, the wall-time budget)
        or a broken answer kills the child before it goes on."""
        if self.forked is None:
            with bounded_by(None):  # copied into the child's context: the fork runs under no step's deadline
                _waves.wait_for_fork(self)
            try:
                await _waves.gathered()
                with bounded_by(None):  # not user code: the deadline's exception must not land between unshare and fork
                    await on_user_thread(_waves.fork_waiting)
            except BaseException:
                _waves.give_up(self)
                raise
            if self.fork_error is not None:
                raise self.fork_error
            if self.forked is None:  # `fork_waiting` on the step's own user thread forks it or says why not
                raise IsolationError(f"the isolated child of the step at {self.step.step_id} was not forked")
        loop = asyncio.get_running_loop()
        # A pickle the child made fits in the memory it may add to what it shares: a longer one is no answer.
        limit = self.isolation.memory_mb * 2**20
        try:
            if not self.walled:
                async with asyncio.timeout(_READY_SECONDS):
                    first = await read_frame(loop, self.channel, limit)
                if first != ("ready",):
                    self.kill()
                    raise IsolationUnavailableError(unavailable(f"{first[1]:.500}", self.step.step_id))
                self.walled = True
                # Before the first request: no model code has run yet to put something else in their place.
                self.left_output = LeftOutput(self.temp_dir)
            await loop.sock_sendall(self.channel, frame(request))
            answer = await read_frame(loop, self.channel, limit)
            match answer:
                case ("output", str(out), str(err)):  # what the request printed, once, ahead of its answer
                    await on_user_thread(partial(relay, out, err))
                    answer = await read_frame(loop, self.channel, limit)
                case ("output", *_):
                    raise self._unexpected(answer)
            if isinstance(answer, tuple) and answer[:1] == ("output",):
                raise self._unexpected(answer)  # a second one: only the model's code sends that
            return answer
        except (ChannelClosed, ConnectionError):
            raise await self._ended(doing) from None
        except TimeoutError:
            self.kill()
            raise IsolationError(
                f"the isolated child of the step at {self.step.step_id} took over {_READY_SECONDS:.0f} s to raise its walls"
            ) from None
        except OversizedMessage as oversized:
            self.kill()
            self._show_left_output()
            raise IsolationError(
                f"the isolated child of the step at {self.step.step_id} announced an answer of {oversized.size:,} bytes "
                f"while running {doing}, more than its memory limit ({self.isolation.memory_mb} MiB) lets it make; it was ended, and nothing "
                "was committed"
            ) from None
        except BaseException:
            self.kill()
            self._show_left_output()
            raise

    async def _ended(self, doing: str) -> IsolationError:
        # Shown first: an interrupt during the wait for the exit code would lose it.
        self._show_left_output()
        # Its own end, unless it only closed the channel: then it is killed.
        self.code = await self.forked.exit_code()  # type: ignore[union-attr]
        self.close()
        return IsolationError(
            f"the isolated child of the step at {self.step.step_id} {_how_it_ended(self.code, self.isolation)} while "
            f"running {doing}; the kernel and its namespace are as they were, and nothing was committed"
        )

    def _show_left_output(self) -> None:
        """Show what the call under way printed before its child ended without answering (once, read here:
        the step's task may be cancelled, so it does not wait for the user's thread)."""
        if self.left_output is not None and (left := self.left_output.taken()) is not None:
            relay(*left)

    async def aclose(self) -> None:
        """`close`, from the step's loop: it only signals, so it never waits there."""
        self.close()

    def kill(self) -> None:
        """Kill the child, on the step's loop: `close` ends the rest of its tree."""
        if self.forked is not None and self.code is None and self.channel.fileno() >= 0:
            self.forked.kill()

    def close(self) -> None:
        """Kill the child and every process it started, and leave the reaping and the clean-up to the reaper
        (`_reaping.py`) or to the wave.

        Reaping waits for the kernel to tear the child's memory down (milliseconds for a large process): the
        step need not wait for it, for no process of the child's tree runs another instruction once it is
        sent SIGKILL."""
        if self.left_output is not None:
            self.left_output.close()
        with self._forking:
            self.closed = True
            if self.forked is None or self.channel.fileno() < 0:
                _waves.done(self)
                return
            self.channel.close()
        _waves.done(self)
        self.forked.end()


@dataclass
class _Alone:
    """A child the kernel forked itself (the worker, or its keeper when not root): the kernel kills and reaps it."""

    pid: int
    grouped: bool
    """Whether `pid` is the worker itself (forked into its namespace), whose process group is its tree."""
    temp_dir: str
    cpu_seconds: int
    reaped: bool = False

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # reaped already by someone else's SIGCHLD handler
            os.kill(self.pid, signal.SIGKILL)

    async def exit_code(self) -> int | None:
        """Its exit code, reaped here once it ended (`None` if it does not end)."""
        for _ in range(100):
            try:
                pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid:
                self.reaped = True
                return ended_code(status, usage, self.cpu_seconds)
            await asyncio.sleep(0.02)
        return None

    def end(self) -> None:
        if self.reaped:
            remove_folder(self.temp_dir)
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
            if self.grouped:
                # The worker leads its own process group, which nothing it starts may leave (seccomp denies
                # `setsid` and `setpgid`): one signal reaches them all at once, not when the worker is torn down.
                os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # the group is not made yet (the child dies before its walls), or the child is reaped already
        reaper.reap(self.pid, self.temp_dir)


@dataclass(frozen=True)
class _InWave:
    """A worker a wave forked: the wave kills it when the step shuts this socket, reaps it, says how it ended
    and removes its folder."""

    status: socket.socket

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.status.shutdown(socket.SHUT_WR)

    async def exit_code(self) -> int | None:
        return await _waves.worker_exit(self.status)

    def end(self) -> None:
        self.status.close()  # the wave kills the worker and its tree, reaps it and removes its folder


def _how_it_ended(code: int | None, isolation: Isolation) -> str:
    if code is None or code < 0:
        return "ended"
    if code < 128:
        return f"exited with status {code} (the model's code ended it)"
    number = code - 128
    if number == signal.SIGKILL:
        return f"was killed (SIGKILL: it ran out of memory, or the kernel killed it; memory limit {isolation.memory_mb} MiB)"
    if number == signal.SIGSYS:
        return "was killed (it sent itself SIGKILL)"
    if number == signal.SIGXCPU:
        return f"ran out of CPU time (limit {isolation.cpu_seconds} s)"
    if number in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT):
        return f"crashed ({signal.Signals(number).name})"
    try:
        return f"was killed by {signal.Signals(number).name}"
    except ValueError:
        return f"exited with status {code}"
