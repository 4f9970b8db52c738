"""A map's steps go from the start of their model run to their first request one at a time, in turn.

pydantic-ai hands control back to the loop a dozen times before it sends a step's first request. The loop
takes whatever is ready in turn, so when a map puts 32 steps on it at once none sends before all are ready:
they reach the model together, land together, and start the next round together. Such a map runs in waves,
each longer than the model's latency by the work of the whole wave, and the waves never spread out again.
Taken in turn, a step sends as soon as its own preparation is done: requests and landings spread out, and
the work on one item overlaps the waits of the others.

Only what the loop does alone is held: the gate is taken once the prompt is rendered and left when the
request is handed to the model, before the step can wait for anything else (the user's thread, the
provider). Steps other than a map's (a plain call, a sync call made by an item's tool) do not use it, and
a map's steps pass freely while none of its requests waits for the model: with nothing to overlap, turns
would only make the loop go round more often for the same work.

Turns alone do not keep the steps apart: answers that come back close together are worked on together,
and the next requests leave close together again, so the items travel as a train. While the loop works
through a train, every item in it waits for the others (at 200 ms a request and 32 items in flight, 10-20
ms a round trip). So, while the process has CPU time to spare, consecutive first requests also leave at
least the loop's own CPU time per request apart (read on the loop thread as the map runs): the answers
come back spread out and each finds the loop free (1,000 items: 0.83-0.89 of the latency floor against
0.81-0.83 without the spacing, in runs taken in turn). A map bound by the CPU is not spaced:
it would gain nothing, and the extra hand-offs cost it CPU time.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

from ..threads._loop import _caller

__all__ = ["gate_steps", "on_request", "passing_gate", "requesting"]


class _Gate:
    def __init__(self, caller: object) -> None:
        self.caller = caller
        self.lock = asyncio.Lock()  # wakes its waiters in the order they came
        self.waiting_for_model = 0
        """Requests of these steps sent and not answered yet."""
        self.requests = 0
        """Requests of these steps sent so far."""
        self.spacing = 0.0
        """Seconds between two first requests, read over the last window; 0 while the CPU is the bound."""
        self.next_first_request = 0.0
        """The monotonic time before which no step sends its first request."""
        self._window: _Window | None = None

    def sent(self) -> None:
        """Count a request of these steps."""
        self.requests += 1

    def sent_first(self) -> None:
        """A step sent its first request (on the loop's thread): book the time the next one may send, the
        spacing after this one's booking. From the booking, not from now: a step that sent late (the loop
        was busy) does not push every later one back, so the spacing never slows a map the CPU already
        bounds; and after a pause the next may go at once."""
        window = self._window
        if window is None or window.first_requests + 1 >= _WINDOW:
            if window is not None:
                self.spacing = window.spacing(self.requests)
            self._window = _Window(
                first_requests=0,
                started=time.monotonic(),
                process_cpu=time.process_time(),
                loop_cpu=time.thread_time(),
                requests=self.requests,
            )
        else:
            window.first_requests += 1
        self.next_first_request = max(self.next_first_request + self.spacing, time.monotonic())


@dataclass(kw_only=True)
class _Window:
    """Where a run of `_WINDOW` first requests started: the clock, the CPU times and the requests sent."""

    first_requests: int
    started: float
    process_cpu: float
    loop_cpu: float
    """The loop thread's CPU time (read on the loop's thread, where first requests are sent)."""
    requests: int

    def spacing(self, requests_now: int) -> float:
        """The loop's CPU time per request over the window, if the process left CPU time unused then; else
        0. A map bound by the CPU gains nothing from spacing, and it would only add hand-offs between the
        loop and the caller (measured: 20-30% more CPU per item with answers in 0-20 ms). Read afresh each
        window, so dear requests early in a map do not hold back the cheap ones after them."""
        wall = time.monotonic() - self.started
        if time.process_time() - self.process_cpu >= _BUSY * wall or requests_now <= self.requests:
            return 0.0
        per_request = (time.thread_time() - self.loop_cpu) / (requests_now - self.requests)
        return min(max(per_request, 0.0), _MOST_SPACING_S)


_WINDOW = 16
"""First requests over which the CPU times are read (none are spaced before the first window ends)."""
_BUSY = 0.9
"""The share of one core's time above which the process is taken as bound by its CPU (the GIL's core)."""
_MOST_SPACING_S = 0.05
"""A bound on the spacing, whatever the CPU times read (a loop thread busy with other work)."""


class _Pass:
    """One step's way through the gate; left once, at its first request or when its run ends."""

    def __init__(self, gate: _Gate) -> None:
        self._gate: _Gate | None = gate

    def leave(self, *, sending: bool) -> None:
        if self._gate is not None:
            if sending:
                self._gate.sent_first()
            self._gate.lock.release()
            self._gate = None


_gate: contextvars.ContextVar[_Gate | None] = contextvars.ContextVar("nighthawk_send_gate", default=None)
_pass: contextvars.ContextVar[_Pass | None] = contextvars.ContextVar("nighthawk_send_pass", default=None)
_on_request: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar("nighthawk_on_request", default=None)


def on_request(callback: Callable[[], None]) -> None:
    """Call `callback` (on the loop's thread) each time a step started in the current context (one of a map's
    items) hands a request to the model: the map then knows that the item's preparation is over."""
    _on_request.set(callback)


def gate_steps(caller: object) -> None:
    """Make the steps started in the current context and served by `caller` (a map's items) take turns."""
    _gate.set(_Gate(caller))


@asynccontextmanager
async def passing_gate() -> AsyncIterator[None]:
    """Hold the gate of the current context, if its steps take turns (and are served by the caller that
    gated them, not by a sync call nested in an item), until the step's first request or the body's end."""
    gate = _gate.get()
    if gate is None or gate.caller is not _caller.get() or not gate.waiting_for_model:
        # Taking turns only spreads the waits for the model: with none going on (a model that answers at
        # once) it would only make the loop turn more often for the same work.
        yield
        return
    await gate.lock.acquire()
    passage = _Pass(gate)
    token = _pass.set(passage)
    try:
        early = gate.next_first_request - time.monotonic()
        if early > 0:
            await asyncio.sleep(early)
        yield
    finally:
        passage.leave(sending=False)
        _pass.reset(token)


@contextmanager
def requesting() -> Iterator[None]:
    """The current step hands a request to the model inside the `with` block: the next step may go, and
    the others take turns while the answer is awaited."""
    passage = _pass.get()
    if passage is not None:
        passage.leave(sending=True)
    told = _on_request.get()
    if told is not None:
        told()
    gate = _gate.get()
    if gate is None:
        yield
        return
    gate.sent()
    gate.waiting_for_model += 1
    try:
        yield
    finally:
        gate.waiting_for_model -= 1
