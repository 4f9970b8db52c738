"""`retrying`: call again after a failure, with a wait between attempts; a decorator or a `for` loop."""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

from ..errors import BudgetExceededError, ExecutionError
from ._calls import ExceptionTypes, as_tuple, handled, is_async, note

__all__ = ["AttemptManager", "RetryCallState", "Retrying", "retrying"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class RetryCallState:
    """Where a retried call stands; given to `wait` and `on_retry` (its fields are named as tenacity's, so
    tenacity's wait strategies such as `wait_fixed(2)` or `wait_exponential()` can be passed as `wait`)."""

    attempt_number: int = 1
    """The attempt that just failed (1 for the first)."""
    exception: BaseException | None = None
    """What it raised."""
    start_time: float = field(default_factory=time.monotonic)
    idle_for: float = 0.0
    """Seconds spent waiting between attempts so far."""
    upcoming_sleep: float = 0.0
    """Seconds until the next attempt (set before `on_retry` is called)."""
    fn: Callable[..., Any] | None = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds_since_start(self) -> float:
        return time.monotonic() - self.start_time

    @property
    def outcome(self) -> _Outcome:
        return _Outcome(self.exception)


@dataclass(frozen=True)
class _Outcome:
    """tenacity's `retry_state.outcome`, for strategies that read it."""

    error: BaseException | None

    @property
    def failed(self) -> bool:
        return self.error is not None

    def exception(self) -> BaseException | None:
        return self.error


def _exponential_jitter(state: RetryCallState) -> float:
    """The default wait: 1 s doubling each attempt up to 30 s, plus up to 1 s at random (so many callers
    failing together do not all come back at the same moment)."""
    return min(30.0, 2.0 ** (state.attempt_number - 1)) + random.uniform(0, 1)


class Retrying:
    """Retry policy made by `retrying(...)`: wrap a function with it, or loop over it (`for attempt in ...:
    with attempt: ...`, `async for` too)."""

    def __init__(
        self,
        *,
        attempts: int,
        on: ExceptionTypes | None,
        retry_if: Callable[[BaseException], bool] | None,
        wait: Callable[[RetryCallState], float] | float | None,
        on_retry: Callable[[RetryCallState], None] | None,
    ) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"`attempts` must be a whole number of at least 1, got {attempts!r}")
        self.attempts = attempts
        self._explicit_on = on is not None
        self.on = as_tuple(on) if on is not None else (ExecutionError,)
        self.retry_if = retry_if
        if wait is None:
            self.wait: Callable[[RetryCallState], float] = _exponential_jitter
        elif isinstance(wait, (int, float)):
            seconds = float(wait)
            self.wait = lambda _state: seconds
        else:
            self.wait = wait
        self.on_retry = on_retry

    def should_retry(self, error: BaseException) -> bool:
        if not handled(error, self.on):
            return False
        # A spent budget stays spent: by default it is not retried (name it in `on=` to retry it anyway).
        if not self._explicit_on and isinstance(error, BudgetExceededError):
            return False
        return self.retry_if is None or bool(self.retry_if(error))

    def _next(self, state: RetryCallState, error: BaseException) -> float | None:
        """Seconds to wait before the next attempt, or `None` when `error` must be raised."""
        state.exception = error
        if state.attempt_number >= self.attempts or not self.should_retry(error):
            if state.attempt_number >= self.attempts and self.should_retry(error):
                note(
                    "gave_up", logging.WARNING, "retrying: %d attempts failed, giving up: %r", state.attempt_number,
                    error, attempts=state.attempt_number, error_type=type(error).__name__,
                )
            return None
        delay = max(0.0, float(self.wait(state)))
        state.upcoming_sleep = delay
        note(
            "retry", logging.INFO, "retrying: attempt %d failed (%r), next in %.2f s", state.attempt_number, error,
            delay, attempt=state.attempt_number, error_type=type(error).__name__, wait_s=delay,
        )
        if self.on_retry is not None:
            self.on_retry(state)
        state.idle_for += delay
        return delay

    def __call__(self, function: F) -> F:
        if is_async(function):

            @functools.wraps(function)
            async def retried_async(*args: Any, **kwargs: Any) -> Any:
                state = RetryCallState(fn=function, args=args, kwargs=kwargs)
                while True:
                    try:
                        return await function(*args, **kwargs)
                    except Exception as error:
                        delay = self._next(state, error)
                        if delay is None:
                            raise
                    await asyncio.sleep(delay)
                    state.attempt_number += 1

            return retried_async  # type: ignore[return-value]

        @functools.wraps(function)
        def retried(*args: Any, **kwargs: Any) -> Any:
            state = RetryCallState(fn=function, args=args, kwargs=kwargs)
            while True:
                try:
                    return function(*args, **kwargs)
                except Exception as error:
                    delay = self._next(state, error)
                    if delay is None:
                        raise
                time.sleep(delay)
                state.attempt_number += 1

        return retried  # type: ignore[return-value]

    def __iter__(self) -> Iterator[AttemptManager]:
        state = RetryCallState()
        while True:
            attempt = AttemptManager(state)
            yield attempt
            delay = self._after(attempt, state)
            if delay is None:
                return
            time.sleep(delay)
            state.attempt_number += 1

    async def __aiter__(self) -> AsyncIterator[AttemptManager]:
        state = RetryCallState()
        while True:
            attempt = AttemptManager(state)
            yield attempt
            delay = self._after(attempt, state)
            if delay is None:
                return
            await asyncio.sleep(delay)
            state.attempt_number += 1

    def _after(self, attempt: AttemptManager, state: RetryCallState) -> float | None:
        """After one pass of a `for attempt` loop: `None` to stop (success), a wait to go on; raises the
        attempt's error when it is not retried."""
        error = attempt.error
        if error is None:
            return None
        delay = self._next(state, error)
        if delay is None:
            raise error
        return delay


class AttemptManager:
    """One attempt of a `for attempt in retrying(...)` loop: `with attempt:` keeps a retried error for the
    loop to decide on, and lets any other exception through."""

    def __init__(self, state: RetryCallState) -> None:
        self.state = state
        self.error: BaseException | None = None

    def __enter__(self) -> AttemptManager:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        if error is None or not isinstance(error, Exception):
            return False
        self.error = error
        return True


def retrying(
    *,
    attempts: int = 3,
    on: ExceptionTypes | None = None,
    retry_if: Callable[[BaseException], bool] | None = None,
    wait: Callable[[RetryCallState], float] | float | None = None,
    on_retry: Callable[[RetryCallState], None] | None = None,
) -> Retrying:
    """Call a function again when it fails, up to `attempts` calls in all; the last error is raised.

    Args:
        attempts: Calls in all, the first included.
        on: Exception classes that may be retried (default `ExecutionError`, a spent budget excepted).
        retry_if: Told the error once `on` matches; return False to raise it instead of retrying.
        wait: Seconds between attempts: a number, or a function of the `RetryCallState` (a tenacity wait
            strategy works). Default: exponential from 1 s up to 30 s, with up to 1 s of jitter.
        on_retry: Called with the `RetryCallState` each time a retry is decided, before the wait.

    Returns:
        A `Retrying`: call it on a function (`retrying(attempts=3)(classify)`), or loop over it.
    """
    return Retrying(attempts=attempts, on=on, retry_if=retry_if, wait=wait, on_retry=on_retry)
