"""Who listens to the runner's events: the registry behind `nighthawk.events.listen` and `listening()`.

Kept apart from the event dataclasses (`nighthawk.events`) so that the modules `import nighthawk` and
`%load_ext` load can ask whether anyone listens without making those classes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeAlias

__all__ = [
    "EventListener",
    "add_process_listener",
    "emit",
    "forget_listeners",
    "listen",
    "listening",
    "remove_process_listener",
]

_logger = logging.getLogger("nighthawk")

EventListener: TypeAlias = Callable[[Any], None]
"""A callable given each event (an instance of one of `nighthawk.events`' classes)."""

_listeners: ContextVar[tuple[EventListener, ...]] = ContextVar("nighthawk_event_listeners", default=())


_process_listeners: list[EventListener] = []


def _active_listeners() -> tuple[EventListener, ...]:
    scoped = _listeners.get()
    if not _process_listeners:
        return scoped
    return (*[listener for listener in _process_listeners if getattr(listener, "active", True)], *scoped)


def forget_listeners() -> None:
    """Deliver no event from here on: in a forked child, whose listeners (displays, telemetry) belong to the
    kernel and hold its locks and sockets."""
    _process_listeners.clear()
    _listeners.set(())


def listening() -> bool:
    """Whether any listener would receive an event now (check before building one)."""
    return bool(_active_listeners())


def emit(event: Any) -> None:
    """Deliver an event to every active listener; a failing listener is logged, never raised.

    Every string in the event is scrubbed of the current step's secrets first, once, so no listener (a
    display, the OpenTelemetry spans, a user's own) can receive a secret value.
    """
    listeners = _active_listeners()
    if not listeners:
        return
    # Here, not at the top: secret collection (base64, ast) is a step's; an event with a listener needs it.
    from .secrets._scrubber import current_scrubber

    event = current_scrubber().scrub_data(event)
    for listener in listeners:
        try:
            listener(event)
        except Exception:  # a display bug must never break the user's program
            _logger.exception("nighthawk event listener %r failed", listener)


def add_process_listener(listener: EventListener) -> None:
    """Register a listener for every context of the process (used for the default OpenTelemetry emitter).

    A listener object with an `active` attribute that is false is skipped, so a process-wide listener can
    stay registered at no cost while it has nothing to do.
    """
    if listener not in _process_listeners:
        _process_listeners.append(listener)


def remove_process_listener(listener: EventListener) -> None:
    """Undo `add_process_listener`."""
    if listener in _process_listeners:
        _process_listeners.remove(listener)


@contextmanager
def listen(listener: EventListener) -> Iterator[EventListener]:
    """Register `listener` for the events emitted inside the `with` block (and tasks started from it)."""
    token = _listeners.set((*_listeners.get(), listener))
    try:
        yield listener
    finally:
        _listeners.reset(token)
