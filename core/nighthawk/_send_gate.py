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
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from ._loop import _caller

__all__ = ["gate_steps", "passing_gate", "requesting"]


class _Gate:
    def __init__(self, caller: object) -> None:
        self.caller = caller
        self.lock = asyncio.Lock()  # wakes its waiters in the order they came
        self.waiting_for_model = 0
        """Requests of these steps sent and not answered yet."""


class _Pass:
    """One step's way through the gate; left once, at its first request or when its run ends."""

    def __init__(self, lock: asyncio.Lock) -> None:
        self._lock: asyncio.Lock | None = lock

    def leave(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


_gate: contextvars.ContextVar[_Gate | None] = contextvars.ContextVar("nighthawk_send_gate", default=None)
_pass: contextvars.ContextVar[_Pass | None] = contextvars.ContextVar("nighthawk_send_pass", default=None)


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
    passage = _Pass(gate.lock)
    token = _pass.set(passage)
    try:
        yield
    finally:
        passage.leave()
        _pass.reset(token)


@contextmanager
def requesting() -> Iterator[None]:
    """The current step hands a request to the model inside the `with` block: the next step may go, and
    the others take turns while the answer is awaited."""
    passage = _pass.get()
    if passage is not None:
        passage.leave()
    gate = _gate.get()
    if gate is None:
        yield
        return
    gate.waiting_for_model += 1
    try:
        yield
    finally:
        gate.waiting_for_model -= 1
