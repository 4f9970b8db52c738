"""`timeout`: give up on a call that takes too long."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from ._calls import is_async, note

__all__ = ["timeout"]

F = TypeVar("F", bound=Callable[..., Any])


class timeout:  # noqa: N801 - used like a function: `timeout(seconds=30)(classify)`
    """Bound a call to `seconds`, raising `TimeoutError` past it.

    An async function is cancelled at the limit. A sync one runs in a helper thread (in a copy of the
    caller's context, so the run, scopes and budgets in force apply) while the caller waits; past the limit
    the caller gets `TimeoutError` and the thread is left to finish on its own, as Python cannot stop it.
    For a natural function prefer a wall-time budget (`nighthawk.budget(wall_time_s=...)`), which ends the
    step itself. Also usable as `async with timeout(seconds=...):`.
    """

    def __init__(self, *, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise ValueError(f"`seconds` must be a positive number, got {seconds!r}")
        self.seconds = float(seconds)
        self._scope: Any = None

    def __call__(self, function: F) -> F:
        seconds = self.seconds
        if is_async(function):

            @functools.wraps(function)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    async with asyncio.timeout(seconds):
                        return await function(*args, **kwargs)
                except TimeoutError:
                    _timed_out(function, seconds)
                    raise

            return timed_async  # type: ignore[return-value]

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            outcome: list[Any] = []
            context = contextvars.copy_context()

            def target() -> None:
                try:
                    outcome.append((True, context.run(function, *args, **kwargs)))
                except BaseException as error:  # handed to the caller, whatever it is
                    outcome.append((False, error))

            worker = threading.Thread(target=target, name=f"nighthawk-timeout-{getattr(function, '__name__', 'call')}", daemon=True)
            worker.start()
            worker.join(seconds)
            if not outcome:
                _timed_out(function, seconds)
                raise TimeoutError(f"{getattr(function, '__qualname__', function)} took longer than {seconds:g} s")
            succeeded, value = outcome[0]
            if not succeeded:
                raise value
            return value

        return timed  # type: ignore[return-value]

    async def __aenter__(self) -> timeout:
        self._scope = asyncio.timeout(self.seconds)
        await self._scope.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        scope, self._scope = self._scope, None
        return await scope.__aexit__(kind, error, traceback)


def _timed_out(function: Callable[..., Any], seconds: float) -> None:
    name = str(getattr(function, "__name__", function))
    note("timeout", logging.WARNING, "timeout: %s took longer than %g s", name, seconds, function=name, seconds=seconds)
