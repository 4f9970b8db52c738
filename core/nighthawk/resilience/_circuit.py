"""`circuit_breaker`: after repeated failures, refuse calls at once for a while instead of calling."""

from __future__ import annotations

import enum
import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import NighthawkError
from ._calls import ExceptionTypes, as_tuple, handled, is_async, note

__all__ = ["CircuitOpenError", "CircuitState", "circuit_breaker"]


class CircuitState(enum.Enum):
    CLOSED = "closed"
    """Calls go through; failures are counted."""
    OPEN = "open"
    """Calls are refused with `CircuitOpenError` until `reset_timeout` has passed."""
    HALF_OPEN = "half_open"
    """The timeout has passed: the next call is a probe that closes the circuit or opens it again."""


class CircuitOpenError(NighthawkError):
    """The circuit is open: the function was not called."""

    def __init__(self, name: str, time_remaining: float) -> None:
        self.time_remaining = time_remaining
        """Seconds until a probe call is let through."""
        super().__init__(
            f"{name} is not called: its circuit is open after repeated failures; a probe call is let through "
            f"in {time_remaining:.1f} s (or call `.reset()` on the wrapped function)"
        )


class _Breaker:
    """The state of one wrapped function, shared by every thread and task calling it."""

    def __init__(self, name: str, fail_threshold: int, reset_timeout: float, on: tuple[type[BaseException], ...]) -> None:
        self.name = name
        self.fail_threshold = fail_threshold
        self.reset_timeout = reset_timeout
        self.on = on
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> CircuitState:
        with self._lock:
            return self._state()

    def _state(self) -> CircuitState:
        if self._opened_at is None:
            return CircuitState.CLOSED
        if time.monotonic() - self._opened_at >= self.reset_timeout:
            return CircuitState.HALF_OPEN
        return CircuitState.OPEN

    def reset(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._probing = 0, None, False

    def before(self) -> None:
        """Let the call through or raise `CircuitOpenError`; in half-open, only one probe at a time."""
        with self._lock:
            state = self._state()
            if state is CircuitState.CLOSED:
                return
            if state is CircuitState.HALF_OPEN and not self._probing:
                self._probing = True
                return
            assert self._opened_at is not None
            remaining = max(0.0, self.reset_timeout - (time.monotonic() - self._opened_at))
        raise CircuitOpenError(self.name, remaining)

    def succeeded(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._probing = 0, None, False

    def failed(self, error: BaseException) -> None:
        with self._lock:
            probing, self._probing = self._probing, False
            if not handled(error, self.on):
                return  # not a failure of the service (or an interrupt): the count stays as it was
            self._failures += 1
            if probing or self._failures >= self.fail_threshold:
                self._opened_at = time.monotonic()
                note(
                    "circuit_opened", logging.WARNING, "circuit_breaker: %s opened after %d failure(s), last %r",
                    self.name, self._failures, error, name=self.name, failures=self._failures,
                    error_type=type(error).__name__,
                )


def circuit_breaker(
    *, fail_threshold: int = 5, reset_timeout: float = 60.0, on: ExceptionTypes = Exception
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Stop calling a function that keeps failing: after `fail_threshold` failures in a row the circuit
    opens and calls raise `CircuitOpenError` without calling; after `reset_timeout` seconds one probe call
    goes through, and its success closes the circuit (its failure opens it again).

    Each `circuit_breaker(...)` keeps its own state. The wrapped function has `.state` (a `CircuitState`)
    and `.reset()`.

    Args:
        fail_threshold: Consecutive failures that open the circuit.
        reset_timeout: Seconds the circuit stays open before a probe.
        on: Errors that count as failures; others pass through without counting.
    """
    if isinstance(fail_threshold, bool) or not isinstance(fail_threshold, int) or fail_threshold < 1:
        raise ValueError(f"`fail_threshold` must be a whole number of at least 1, got {fail_threshold!r}")
    if isinstance(reset_timeout, bool) or not isinstance(reset_timeout, (int, float)) or reset_timeout < 0:
        raise ValueError(f"`reset_timeout` must be a number of seconds of at least 0, got {reset_timeout!r}")
    kinds = as_tuple(on)

    def transform(function: Callable[..., Any]) -> Callable[..., Any]:
        breaker = _Breaker(getattr(function, "__qualname__", repr(function)), fail_threshold, float(reset_timeout), kinds)
        return (_AsyncBreakerFunction if is_async(function) else _BreakerFunction)(function, breaker)

    return transform


class _BreakerFunction:
    """The wrapped function with its circuit: `.state` is read live, so the wrapper is an object (a
    function cannot have a property), dressed as the function by `functools.update_wrapper`."""

    def __init__(self, function: Callable[..., Any], breaker: _Breaker) -> None:
        functools.update_wrapper(self, function)
        self._function = function
        self._breaker = breaker

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._breaker.before()
        try:
            result = self._function(*args, **kwargs)
        except BaseException as error:
            self._breaker.failed(error)
            raise
        self._breaker.succeeded()
        return result

    @property
    def state(self) -> CircuitState:
        return self._breaker.state

    def reset(self) -> None:
        """Close the circuit and forget the failures."""
        self._breaker.reset()

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        # Wrapping a method: bind like a function would.
        return self if instance is None else functools.partial(self, instance)


class _AsyncBreakerFunction(_BreakerFunction):
    def __init__(self, function: Callable[..., Any], breaker: _Breaker) -> None:
        super().__init__(function, breaker)
        mark = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+: iscoroutinefunction() says so
        if mark is not None:
            mark(self)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self._breaker.before()
        try:
            result = await self._function(*args, **kwargs)
        except BaseException as error:
            self._breaker.failed(error)
            raise
        self._breaker.succeeded()
        return result
