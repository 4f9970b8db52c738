"""Ctrl-C while a step or a map waits on the main thread: taken when it comes, raised where the waiter chooses.

Python's own SIGINT handler raises `KeyboardInterrupt` wherever the main thread happens to be. During a map
that may be a weakref callback or a `__del__` (the collector runs them at any allocation), where Python
prints "Exception ignored in ..." and drops the exception: the interrupt is lost and the map runs on. So while
a waiter (`_loop.run_sync`, the map's driver) runs on the main thread, SIGINT goes to a handler that calls
the handler it replaced (the user's own, or Python's, which makes the `KeyboardInterrupt`), keeps what that
raised, and wakes the waiter, which raises it from `check`. Two cases raise at once as well, as Python would:
a second Ctrl-C (the waiter may be stuck), and one that lands in work the waiter runs (a tool, a sync
scripted model, user code: interrupted where it is, `Interrupts.running`); if that one is dropped, the
waiter's next `check` still raises it.

A handler that was not Python's or the user's (`SIG_IGN`: Ctrl-C is ignored by choice, as in a background
job; `SIG_DFL`; one set outside Python) is left alone, and nothing is taken off other threads, which receive
no signal.
"""

from __future__ import annotations

import contextvars
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["Interrupts", "as_user_code", "interrupt_thread", "signals_reach_user_code", "taking_interrupts", "user_code_depth"]

user_code_depth: contextvars.ContextVar[int] = contextvars.ContextVar("nighthawk_user_code_depth", default=0)
"""How many calls of user code a step made enclose the current code (`_loop` counts them)."""


def as_user_code(fn: Callable[..., T], /, *args: Any) -> T:
    """`fn(*args)`, where Ctrl-C interrupts at once (a map's function body between its blocks, say)."""
    token = user_code_depth.set(user_code_depth.get() + 1)
    try:
        return fn(*args)
    finally:
        user_code_depth.reset(token)


_own_signals = [0]
"""SIGINTs nighthawk sent itself (a step's wall-time deadline) and not yet handled: not the user's Ctrl-C."""


def signals_reach_user_code() -> bool:
    """Whether a SIGINT sent to the main thread now raises `KeyboardInterrupt` in the code it runs: under
    Python's own handler, or one of ours (which raises a signal of `interrupt_thread` at once)."""
    handler = signal.getsignal(signal.SIGINT)
    return handler is signal.default_int_handler or isinstance(getattr(handler, "__self__", None), Interrupts)


def interrupt_thread(thread_id: int) -> None:
    """Send SIGINT to `thread_id` for nighthawk's own reasons: it raises where that thread is, and is never
    kept for a waiter or handed to the user's handler as a Ctrl-C would be."""
    if isinstance(getattr(signal.getsignal(signal.SIGINT), "__self__", None), Interrupts):
        _own_signals[0] += 1  # counted only where one of ours will see it (Python's handler raises it anyway)
    signal.pthread_kill(thread_id, signal.SIGINT)


class Interrupts:
    """What the handler took while one waiter waits: `check` raises it."""

    def __init__(self, chained: Callable[[int, FrameType | None], Any] | None, wake: Callable[[], object]) -> None:
        self._chained = chained
        self._wake = wake
        self._depth = user_code_depth.get()
        self._taken: BaseException | None = None
        self._signals = 0
        self._running = 0
        """Depth of `running` blocks: the waiter is running work it was handed, not waiting."""

    @contextmanager
    def running(self) -> Iterator[None]:
        """While the waiter runs work handed to it (user code, a sync model, a step's call), Ctrl-C raises at
        once, as Python's handler would; if it is dropped there, `check` still raises it afterwards."""
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1

    def check(self) -> None:
        """Raise what an interrupt raised since the last call, if anything."""
        taken, self._taken = self._taken, None
        if taken is not None:
            raise taken

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        assert self._chained is not None
        if _own_signals[0] > 0:  # the deadline's, sent by `interrupt_thread`: it interrupts the code, nothing else
            _own_signals[0] -= 1
            raise KeyboardInterrupt
        try:
            self._chained(signum, frame)
        except BaseException as exc:  # noqa: BLE001 - kept for the waiter, which raises it
            raised: BaseException | None = exc
        else:
            raised = None
        if raised is None:
            return  # the user's handler chose not to interrupt
        self._signals += 1
        self._taken = raised
        self._wake()
        if self._signals > 1 or self._running or user_code_depth.get() > self._depth:
            raise raised


_IDLE = Interrupts(None, lambda: None)
"""Given where no handler is set: its `check` never raises."""


@contextmanager
def taking_interrupts(wake: Callable[[], object]) -> Iterator[Interrupts]:
    """While the block runs on the main thread, SIGINT is kept for the returned `Interrupts` and `wake()` is
    called (from the handler: it must be safe there, as `queue.SimpleQueue.put` is); the previous handler is
    chained, and set back at the end."""
    if threading.current_thread() is not threading.main_thread():
        yield _IDLE
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield _IDLE  # ignored, the system's default, or set outside Python: left as it is
        return
    chained = previous.__self__._chained if isinstance(getattr(previous, "__self__", None), Interrupts) else previous
    interrupts = Interrupts(chained, wake)
    signal.signal(signal.SIGINT, interrupts._handle)
    try:
        yield interrupts
    finally:
        if signal.getsignal(signal.SIGINT) == interrupts._handle:  # unless user code set its own meanwhile
            signal.signal(signal.SIGINT, previous)
            if not isinstance(getattr(previous, "__self__", None), Interrupts):
                _own_signals[0] = 0  # none of ours is left to see one still on its way
