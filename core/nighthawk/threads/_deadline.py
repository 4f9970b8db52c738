"""Stop the user's code when its step's wall-time budget runs out.

The conversation is bounded on its loop by `asyncio.timeout`, but the user's code (an expression, a tool, a
`__repr__` rendered into the prompt) runs on the caller's thread, where a timeout on the loop cannot reach
it. So while user code runs under a deadline, one watchdog thread keeps it in view, and at the deadline it
interrupts the thread running it:

- The main thread, when Python's own SIGINT handler is in place (scripts, kernel cells): a real SIGINT sent
  to that thread alone (`signal.pthread_kill`), the same interrupt "Interrupt kernel" delivers. It wakes a
  blocking call (`time.sleep`, a socket read, a lock wait) as well as stopping a pure-Python loop. Not
  `_thread.interrupt_main`, which only schedules the handler and leaves a blocking call blocking; not
  SIGALRM, whose one timer per process and whose handler are the user's to use.
- Any other thread, or the main thread under another SIGINT handler (`asyncio.run`'s, the user's own, which
  must not be called for our deadline): `DeadlineInterrupt` raised in that thread at its next Python
  instruction (`PyThreadState_SetAsyncExc`). A blocking call there finishes first.

The user's code sees a `KeyboardInterrupt` either way, and `call_within_deadline` turns it into
`DeadlinePassed`, which the runner reports as `BudgetExceededError`. One interrupt at most is sent per call,
only while the call is armed, and a call that fired waits for its interrupt before going on: none is left
pending to land in unrelated code later.
"""

from __future__ import annotations

import math
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

from ._interrupts import interrupt_thread, signals_reach_user_code

if TYPE_CHECKING:
    from ..budget import Deadline

__all__ = ["DeadlineInterrupt", "DeadlinePassed", "bounded_by", "call_within_deadline"]

T = TypeVar("T")

_SETTLE_S = 0.1
"""How long a call that ran into its deadline waits for its interrupt to land (it takes microseconds)."""


class DeadlinePassed(BaseException):
    """User code was stopped at its step's deadline; the runner reports it as `BudgetExceededError`.

    Not an `Exception`, so that no `except Exception` between the user's code and the runner (a tool's
    error envelope, an outcome retry) can mistake it for a failure the model should work around.
    """


class DeadlineInterrupt(KeyboardInterrupt):
    """What user code off the main thread sees when its step's deadline passes."""


_current: ContextVar[Deadline | None] = ContextVar("nighthawk_deadline", default=None)


@contextmanager
def bounded_by(deadline: Deadline | None) -> Iterator[None]:
    """Hold the user code a step runs inside the `with` block to `deadline`."""
    token = _current.set(deadline)
    try:
        yield
    finally:
        _current.reset(token)


def call_within_deadline(fn: Callable[[], T]) -> T:
    """Call the user code `fn`, interrupting it when the current step's deadline passes.

    Raises:
        DeadlinePassed: The deadline passed before or while `fn` ran (whatever `fn` itself then raised,
            which becomes the cause).
    """
    deadline = _current.get()
    if deadline is None:
        return fn()
    if time.monotonic() >= deadline.at:
        raise DeadlinePassed
    watch = _Watch(deadline.at)
    try:
        try:
            _WATCHDOG.arm(watch)  # inside: an interrupt due at once may land before `fn` is even called
            value = fn()
        finally:
            _WATCHDOG.disarm(watch)
        if watch.fired:  # `fn` returned just as it fired: its interrupt may still be on its way
            watch.settle()
            raise DeadlinePassed
    except BaseException as exc:
        try:
            _WATCHDOG.disarm(watch)  # again: the interrupt itself may have cut the first one short
        except KeyboardInterrupt:
            if not watch.fired:
                raise  # a real interrupt
        if not watch.fired or isinstance(exc, DeadlinePassed):
            raise
        if not isinstance(exc, KeyboardInterrupt):  # the user's code turned the interrupt into something else
            watch.settle()
        raise DeadlinePassed from exc
    return value


class _Watch:
    """One call of user code under a deadline, on the thread that makes it."""

    __slots__ = ("at", "by_signal", "fired", "thread_id")

    def __init__(self, at: float) -> None:
        self.at = at
        self.thread_id = threading.get_ident()
        self.by_signal = (
            hasattr(signal, "pthread_kill") and self.thread_id == threading.main_thread().ident and signals_reach_user_code()
        )
        self.fired = False

    def interrupt(self) -> None:
        if self.by_signal:
            interrupt_thread(self.thread_id)
        else:
            _set_async_exception(self.thread_id, DeadlineInterrupt)

    def settle(self) -> None:
        """On the watched thread, after it fired: take delivery of the interrupt if it has not landed yet."""
        if not self.by_signal:
            _set_async_exception(self.thread_id, None)  # drops a pending one
            return
        try:
            until = time.monotonic() + _SETTLE_S
            while time.monotonic() < until:
                time.sleep(0.005)
        except KeyboardInterrupt:
            pass


def _set_async_exception(thread_id: int, exception: type[BaseException] | None) -> None:
    import ctypes  # only when a deadline is hit off the main thread

    target = None if exception is None else ctypes.py_object(exception)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)


class _Watchdog:
    """One daemon thread that interrupts armed calls whose deadline has passed.

    The watched threads touch only a C lock (`with` on it cannot be cut between acquiring and the block that
    releases it) and a C queue: an interrupt landing in a Python-level lock or condition could leave it held.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: set[_Watch] = set()
        self._wake_at = math.inf
        self._wakeups: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def arm(self, watch: _Watch) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="nighthawk-deadline", daemon=True)
                    self._thread.start()
        with self._lock:
            self._watches.add(watch)
            sooner = watch.at < self._wake_at
            if sooner:
                self._wake_at = watch.at
        if sooner:
            self._wakeups.put(None)

    def disarm(self, watch: _Watch) -> None:
        """After this no interrupt is sent for `watch`; `watch.fired` says whether one was."""
        with self._lock:
            self._watches.discard(watch)

    def _run(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                for watch in [watch for watch in self._watches if watch.at <= now]:
                    # Under the lock: a disarm either comes first (no interrupt) or finds `fired` set.
                    self._watches.discard(watch)
                    watch.fired = True
                    try:
                        watch.interrupt()
                    except (OSError, ValueError):  # the thread has just ended: nothing left to stop
                        pass
                self._wake_at = min((watch.at for watch in self._watches), default=math.inf)
                wait = None if self._wake_at == math.inf else self._wake_at - now
            try:
                self._wakeups.get(timeout=wait)
            except queue.Empty:
                pass


_WATCHDOG = _Watchdog()
