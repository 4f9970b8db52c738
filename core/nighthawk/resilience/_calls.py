"""What every transformer shares: calling the wrapped function sync or async, and telling an interrupt from
a failure worth handling."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from ..errors import StepAbortedError

logger = logging.getLogger("nighthawk.resilience")
"""Where the transformers say what they did (a retry, an open circuit, a spent budget)."""

Attribute = str | int | float | bool


def note(event: str, level: int, message: str, *args: object, **attributes: Attribute) -> None:
    """Say what a transformer did: in the `nighthawk.resilience` log, and as the event
    `nighthawk.resilience.<event>` (attributes under the same prefix) on the current OpenTelemetry span when
    one is recording, so a trace shows the retries and fallbacks inside the call they slowed down."""
    logger.log(level, message, *args)
    # opentelemetry-api: loaded when a transformer first acts, not by `import nighthawk.resilience`.
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        prefix = f"nighthawk.resilience.{event}"
        span.add_event(prefix, {f"nighthawk.resilience.{name}": value for name, value in attributes.items()})

ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]


def is_async(function: Callable[..., Any]) -> bool:
    """Whether calling `function` gives a coroutine to await (an `async def`, or a wrapper of one)."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(getattr(function, "__call__", None))


def as_tuple(on: ExceptionTypes) -> tuple[type[BaseException], ...]:
    """`on=` as a tuple of exception classes (a lone class is allowed), checked."""
    types = on if isinstance(on, tuple) else (on,)
    for kind in types:
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            raise TypeError(f"`on` must be an exception class or a tuple of them, got {kind!r}")
    return types


def handled(error: BaseException, on: tuple[type[BaseException], ...]) -> bool:
    """Whether a transformer may act on `error` (retry, fall back, count it): it matches `on` and is not an
    interrupt. An interrupted step means the user wants the whole call stopped, whatever `on` says."""
    return isinstance(error, on) and isinstance(error, Exception) and not isinstance(error, StepAbortedError)
