"""Many calls at once from one thread: waits overlap on the background loop, Python runs on the caller.

The caller's thread does what it does for one sync call (see `_loop`), for every item in flight: it waits
on one queue and runs what arrives there. Steps post the user code they need run (expressions, tools,
return values) to that queue, and a finished step or item posts its landing. A landing resumes the item's
Python right here: a sync natural function's twin runs on to its next block (or its end), an async
function's result is taken as is. So every item's user code runs on the caller's thread, and only the
model conversations, up to `concurrency` of them, run at once on the loop.

The items' steps go from the start of their model run to their first request in turn (`_send_gate`), so
the items spread out instead of moving in waves. Items are prepared as they start, a few at a time: no more
than `PREPARING_AT_ONCE` items of a sync natural function (each goes straight to its first block; an async
function's item may await anything first) wait for their first request to go out, so a map of a thousand at once
sends its first request after a few dozen were prepared, not after all of them (each item's preparation
takes turns with the others' on this thread and on the loop: started together, the thousandth item was
prepared, 9-25 s in, before the first request went out).

Items are pulled from the input only when a place is free, so a long generator is never read ahead.
A map given an `Opening` runs one item at a time until it is opened (a batch map's, until the provider has
taken one of its batches): what the first item meets decides whether the others run at all.
A provider's rate limit slows the whole map, not one item: nothing new is launched until the wait it asked
for is over, and fewer items are in flight afterwards (half as many, growing back by one each time as
many items have finished as are allowed in flight).

An interrupt, or an error a landing raises (the map stops), cancels everything in flight, refusing any
further user code, before it propagates: nothing an item would do can still happen. It costs the same small
amount per item and waits for nothing per item: the loop runs the cancel before anything it had queued, and
cancels every task in one call; the requests they had posted are refused together. The driver then waits a
moment (`UNWIND_WAIT_S`) for a few tasks to unwind; a thousand take a second or more through the model
library, so for more than `UNWIND_WAIT_TASKS` it waits for none (waiting held the prompt back 0.5-0.8 s and
left them unwinding all the same). Those still unwinding finish on the loop, where they can run no user code
(the caller is closed) and send nothing (each was cancelled); the collector is paused meanwhile (`heap`).

While the map runs, `tick` is called about once a second on the caller's thread, whatever the items do (a
progress display redraws its elapsed time and what the map waits on).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from ..budget import UsageTotals, count_in_context
from ..errors import NighthawkError
from ..model._send_gate import gate_steps, on_request
from ..threads import _loop
from ..threads._interrupts import Interrupts, as_user_code, taking_interrupts
from .heap import PAUSE_MAX_S, pause_collection, set_aside_heap, set_aside_if_due
from .twin import StepRequest, coroutine_twin

__all__ = ["Flight", "Opening", "Settle", "drive"]

Settle = Callable[[int, tuple[Any, ...], int, object, BaseException | None, UsageTotals], float | None]
"""`settle(index, args, attempt, value, error, spent)` on the caller's thread (`spent`: what the item's steps
spent over its attempts so far): `None` when the item is done, else the seconds after which to run it
again; more than 0 means the provider asked to slow down. Raising stops the map."""


@dataclass(eq=False, kw_only=True)
class _Item:
    index: int
    args: tuple[Any, ...]
    attempt: int
    context: contextvars.Context
    spent: UsageTotals
    """What the item's steps spent, over all its attempts."""
    twin: Coroutine[Any, Any, Any] | None = None
    """A sync natural function's paused twin; `None` for an async item (the task is the whole call)."""
    task: asyncio.Task[Any] | None = None
    requested: bool = False
    """Whether a step of this attempt has handed a request to the model (set on the loop's thread)."""


class Opening:
    """Keeps a map to one item in flight until `open` is called, from any thread."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._wake: Callable[[], object] = lambda: None

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def open(self) -> None:
        """Let the map start as many items as it may (once; later calls do nothing)."""
        if not self._open.is_set():
            self._open.set()
            self._wake()

    def wakes(self, wake: Callable[[], object]) -> None:
        """Call `wake` when opened: the driver's thread may be waiting on its queue with places free."""
        self._wake = wake


class Flight:
    """How many items of a map are in flight and whether more are about to start: written on the map's thread,
    read from any (a batch map's collector knows a round is complete when every item in flight waits on it)."""

    def __init__(self) -> None:
        self.items = 0
        """Items started and not ended (those waiting to run again included)."""
        self.starting = True
        """Whether the map will start more items before any ends (input left and places free)."""


PREPARING_AT_ONCE = 32
"""Items at most that have started and not yet sent their first request (module note)."""

TICK_S = 1.0
"""Seconds between two calls of `drive`'s `tick`."""

UNWIND_WAIT_S = 0.25
"""Seconds an interrupted map waits for its cancelled tasks to end before it propagates the interrupt."""

UNWIND_WAIT_TASKS = 64
"""An interrupted map with more tasks in flight than this does not wait for them to end (module note)."""


def drive(
    function: Callable[..., Any],
    items: Iterator[tuple[int, tuple[Any, ...]]],
    *,
    concurrency: int,
    settle: Settle,
    total: int | None = None,
    tick: Callable[[], None] | None = None,
    opening: Opening | None = None,
    flight: Flight | None = None,
) -> None:
    """Call `function(*args)` for each `(index, args)` of `items`, `concurrency` at a time; hand each end to
    `settle`, and call `tick()` when the map starts and then every `TICK_S` until it ends. Returns when every
    item has landed; re-raises an interrupt or what `settle` raised. `total`: how many items the map has, when
    known (a short map leaves the collector alone, `heap`); `opening`: until it is open, one item at a time;
    `flight`: kept up to date with the items in flight.

    Raises:
        NighthawkError: Called from a coroutine on nighthawk's background loop (it would wait for itself).
    """
    driver = _Driver(function, concurrency, settle, tick, opening, flight or Flight())
    with set_aside_heap(total), taking_interrupts(lambda: driver.caller.requests.put(_nothing)) as interrupts:
        driver.interrupts = interrupts
        driver.run(items)


class _Driver:
    def __init__(
        self,
        function: Callable[..., Any],
        concurrency: int,
        settle: Settle,
        tick: Callable[[], None] | None,
        opening: Opening | None,
        flight: Flight,
    ) -> None:
        self.loop = _loop._background_loop()
        if threading.current_thread() is _loop._thread:
            raise NighthawkError(
                "`nighthawk.map` was called from a coroutine running on nighthawk's background loop, which would "
                "wait for itself; call it from ordinary (sync) code"
            )
        self.function = function
        self.twin = coroutine_twin(function)
        self.concurrency = concurrency
        self.settle = settle
        self.caller = _loop._Caller()
        self.base = contextvars.copy_context()
        self.base.run(_loop._caller.set, self.caller)
        self.base.run(gate_steps, self.caller)
        self.in_flight: set[_Item] = set()
        self.flight = flight
        self.preparing: set[_Item] = set()
        """Items started whose first request had not gone out when last looked at."""
        self.held = False
        """Whether this thread waits for an item's first request before it starts the next (set here, cleared on
        the loop's thread with a wake-up): only then does a first request post anything here."""
        self.cancelling = False
        self.again: deque[_Item] = deque()
        """Items to run again, before any new one."""
        self.limit = concurrency
        """Items allowed in flight now (lowered by rate limits)."""
        self.finished_at_limit = 0
        self.paused_until = 0.0
        self.tick = tick
        self.ticked = 0.0
        self.opening = opening
        self.interrupts = Interrupts(None, _nothing)
        """Ctrl-C taken while the map runs (set by `drive`): the driver raises it where it looks."""
        if opening is not None:
            opening.wakes(self._opened)  # before `run` first looks at it

    def run(self, items: Iterator[tuple[int, tuple[Any, ...]]]) -> None:
        exhausted = False
        try:
            self._tick_if_due()
            while True:
                paused = time.monotonic() < self.paused_until
                while not paused and len(self.in_flight) < self._room() and self._may_prepare():
                    if self.again:
                        item = self.again.popleft()
                        self._start(item.index, item.args, attempt=item.attempt + 1, spent=item.spent)
                    else:
                        following = None if exhausted else next(items, None)
                        if following is None:
                            exhausted = True
                            break
                        self._start(*following, attempt=0)
                    self._tick_if_due()  # starting thousands of items takes seconds
                    self.interrupts.check()
                self.flight.starting = bool(self.again or not exhausted) and len(self.in_flight) < self._room()
                if not self.in_flight and not self.again and exhausted:
                    return
                try:
                    request = self.caller.requests.get(timeout=self._wait())
                except queue.Empty:
                    request = None  # a pause or a tick is due
                if request is not None:
                    assert not isinstance(request, _loop._Done)  # only `run_sync` posts it
                    with self.interrupts.running():  # a user's sync model or tool: Ctrl-C stops it where it is
                        request()
                self.interrupts.check()
                self._tick_if_due()
        except BaseException:
            self._cancel_all()
            raise
        finally:
            _loop._refuse_all(self.caller.close())

    def _opened(self) -> None:
        """From any thread: the opening opened; the other items start as soon as this thread wakes."""
        self.flight.starting = True  # meanwhile the item that went alone does not make a round by itself
        self.caller.post(_nothing)

    def _room(self) -> int:
        """Items allowed in flight now: one while the map's opening is shut."""
        return self.limit if self.opening is None or self.opening.is_open else 1

    def _wait(self) -> float:
        """How long to wait for the queue: until the next tick, or a pause's end if one holds back items that
        could start and ends sooner."""
        now = time.monotonic()
        wait = self.ticked + TICK_S - now if self.tick is not None else 3600.0
        left = self.paused_until - now
        if left > 0 and len(self.in_flight) < self._room():
            wait = min(wait, left)
        return max(wait, 0.0)

    def _tick_if_due(self) -> None:
        if self.tick is not None and time.monotonic() - self.ticked >= TICK_S:
            self.ticked = time.monotonic()
            set_aside_if_due()
            self.tick()

    # --- one item ---------------------------------------------------------------------------------------

    def _start(self, index: int, args: tuple[Any, ...], *, attempt: int, spent: UsageTotals | None = None) -> None:
        spent = UsageTotals() if spent is None else spent
        item = _Item(index=index, args=args, attempt=attempt, context=self.base.copy(), spent=spent)
        item.context.run(count_in_context, spent)  # every step of the item adds to it, whatever else counts
        item.context.run(on_request, lambda: self._requested(item))
        if attempt == 0:
            self.flight.items += 1
        if self.twin is not None:  # it goes to its first block now; an async item may first await anything
            self.preparing.add(item)
        try:
            # A twin or an async function only makes its coroutine here. A sync callable that is not a
            # natural function runs whole, here.
            made = item.context.run(as_user_code, self.twin or self.function, *args)
        except Exception as exc:  # noqa: BLE001 - the item's failure (a wrong argument), settled like any other
            self._finish(item, None, exc)
            return
        if self.twin is not None:
            item.twin = made
            self._advance(item, None, None)
        elif inspect.iscoroutine(made):
            # The coroutine itself is the task: cancelled before it starts, it closes quietly, where a
            # wrapper would leave it "never awaited".
            self._launch(item, made, item.context)
        elif inspect.isawaitable(made):
            self._launch(item, _awaited(made), item.context)
        else:
            self._finish(item, made, None)

    def _advance(self, item: _Item, value: object, error: BaseException | None) -> None:
        """Run the twin's Python on to its next block (whose step is launched) or to its end."""
        assert item.twin is not None
        try:
            if error is None:
                request = item.context.run(as_user_code, item.twin.send, value)
            else:
                request = item.context.run(as_user_code, item.twin.throw, error)
        except StopIteration as stop:
            self._finish(item, stop.value, None)
            return
        except Exception as exc:  # noqa: BLE001 - the item's failure
            self._finish(item, None, exc)
            return
        if not isinstance(request, StepRequest):  # pragma: no cover - a sync body awaits nothing else
            item.twin.close()
            raise NighthawkError(f"a natural function's twin awaited {request!r}, not a block")
        # Each step gets its own copy of the item's context, as a plain call's step does.
        self._launch(item, request.coroutine, item.context.copy())

    def _launch(self, item: _Item, coroutine: Coroutine[Any, Any, Any], context: contextvars.Context) -> None:
        self.in_flight.add(item)
        caller = self.caller

        def start() -> None:
            if self.cancelling:  # the map's cancel ran first (it jumps the queue): this item never starts
                coroutine.close()
                return
            task = self.loop.create_task(coroutine, context=context)
            item.task = task
            task.add_done_callback(lambda done: caller.requests.put(lambda: self._landed(item, done)))

        self.loop.call_soon_threadsafe(start)

    def _may_prepare(self) -> bool:
        """Whether fewer than `PREPARING_AT_ONCE` items wait for their first request; if not, the loop's next
        first request wakes this thread (`held`)."""
        self.preparing = {item for item in self.preparing if not item.requested}
        if len(self.preparing) < PREPARING_AT_ONCE:
            return True
        self.held = True
        # An item may have sent between the count and `held`, without a wake-up: count again.
        self.preparing = {item for item in self.preparing if not item.requested}
        return len(self.preparing) < PREPARING_AT_ONCE

    def _requested(self, item: _Item) -> None:
        """On the loop's thread: a step of `item` hands a request to the model, which ends its preparation."""
        item.requested = True
        if self.held:
            self.held = False
            self.caller.post(_nothing)

    def _landed(self, item: _Item, task: asyncio.Task[Any]) -> None:
        self.in_flight.discard(item)
        self.preparing.discard(item)  # a step may end without a request (a failure on the way)
        if self.cancelling:
            if not task.cancelled():
                task.exception()  # read, so asyncio does not log a "never retrieved" error the map already ended on
            if item.twin is not None:
                _close(item)
            return
        if task.cancelled():
            error: BaseException | None = asyncio.CancelledError()
        else:
            error = task.exception()
        value = None if error is not None else task.result()
        if item.twin is not None:
            self._advance(item, value, error)
        else:
            self._finish(item, value, error)

    def _finish(self, item: _Item, value: object, error: BaseException | None) -> None:
        set_aside_if_due()  # between items, on this thread: the heap may be set aside from here on
        self.preparing.discard(item)
        after_s = self.settle(item.index, item.args, item.attempt, value, error, item.spent)
        if after_s is None:
            self.flight.items -= 1
            self._finished()
            return
        if after_s > 0:
            self._slow_down(after_s)
        self.again.append(item)

    def _slow_down(self, after_s: float) -> None:
        now = time.monotonic()
        # While the opening is shut, one item in flight says nothing of how many the provider takes: only wait.
        held = self.opening is not None and not self.opening.is_open
        if not held and now >= self.paused_until:  # a new burst; the other refusals of the same burst only extend the wait
            self.limit = max(1, min(self.limit, len(self.in_flight) + 1) // 2)
            self.finished_at_limit = 0
        self.paused_until = max(self.paused_until, now + after_s)

    def _finished(self) -> None:
        if self.limit < self.concurrency:
            self.finished_at_limit += 1
            if self.finished_at_limit >= self.limit:
                self.limit += 1
                self.finished_at_limit = 0

    # --- stopping ---------------------------------------------------------------------------------------

    def _cancel_all(self) -> None:
        """Cancel every item in flight, running none of their user code, and give them a moment to end.

        It waits on the tasks themselves, not on their landings: the interrupt that stops the map may have
        taken a landing off the queue, or come before an item's task was made, and neither will post again.
        Nothing here is done item by item across the threads: one call on the loop cancels every task and
        counts them down as they end, and the requests they posted meanwhile are refused together.
        """
        self.cancelling = True
        items = list(self.in_flight)
        cancelled = threading.Event()
        ended = threading.Event()

        def cancel() -> None:  # a task still `None` here is never made: its `start` sees `cancelling`
            tasks = [item.task for item in items if item.task is not None and not item.task.done()]
            left = [len(tasks)]
            # Here, on the loop: it ends here too, once the tasks have unwound (or after PAUSE_MAX_S).
            resume_collection = pause_collection()

            def one_ended(_: object) -> None:
                left[0] -= 1
                if left[0] == 0:
                    ended.set()
                    resume_collection()

            for task in tasks:
                task.cancel()
                task.add_done_callback(one_ended)
            if tasks:
                self.loop.call_later(PAUSE_MAX_S, resume_collection)
            else:
                ended.set()
                resume_collection()
            cancelled.set()

        _loop.call_first_threadsafe(self.loop, cancel)
        try:
            cancelled.wait()
            for item in items:
                if item.twin is not None:
                    _close(item)  # on this thread: the twin is the user's function, paused at a block
            if len(items) <= UNWIND_WAIT_TASKS:
                ended.wait(UNWIND_WAIT_S)
            _loop._refuse_all(_drained(self.caller.requests))  # landings just drop their item
        except KeyboardInterrupt:
            return  # a second interrupt: stop waiting; the caller is closed, nothing more runs here


def _drained(requests: queue.SimpleQueue[Any]) -> list[Callable[[], None]]:
    """What is queued now, without waiting."""
    taken = []
    while True:
        try:
            taken.append(requests.get_nowait())
        except queue.Empty:
            return taken


def _nothing() -> None:
    """Posted to wake the driver's thread (it then looks again at what it may start)."""


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _close(item: _Item) -> None:
    assert item.twin is not None
    try:
        item.context.run(item.twin.close)
    except Exception:  # noqa: BLE001 - the map is already ending with its own error
        pass
