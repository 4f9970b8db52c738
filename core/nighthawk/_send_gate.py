"""A map's steps go from the start of their model run to their first request one at a time, in turn.

pydantic-ai hands control back to the loop a dozen times before it sends a step's first request. The loop
takes whatever is ready in turn, so when a map puts 32 steps on it at once none sends before all are ready:
they reach the model together, land together, and start the next round together. Such a map runs in waves,
each longer than the model's latency by the work of the whole wave, and the waves never spread out again.
Taken in turn, a step sends as soon as its own preparation is done: requests and landings spread out, and
the work on one item overlaps the waits of the others.

Only what the loop does alone is held: the gate is taken once the prompt is rendered and left when the
request is handed to the model, before the step can wait for anything else (the user's thread, the
provider). Steps other than a map's (a plain call, a sync call made by an item's tool) do not use it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ._loop import _caller

__all__ = ["gate_steps", "passing_gate", "request_sent"]


class _Gate:
    def __init__(self, caller: object) -> None:
        self.caller = caller
        self.lock = asyncio.Lock()  # wakes its waiters in the order they came


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
    if gate is None or gate.caller is not _caller.get():
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


def request_sent() -> None:
    """The current step hands its request to the model: the next step may go."""
    passage = _pass.get()
    if passage is not None:
        passage.leave()
