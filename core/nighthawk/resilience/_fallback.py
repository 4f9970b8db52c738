"""`fallback`: try functions in order; the first that succeeds gives the result."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from ._calls import ExceptionTypes, as_tuple, handled, is_async, note

__all__ = ["fallback"]

_NO_DEFAULT: Any = object()


def fallback(*functions: Callable[..., Any], default: Any = _NO_DEFAULT, on: ExceptionTypes = Exception) -> Callable[..., Any]:
    """Call `functions` in order with the same arguments until one succeeds.

    Args:
        functions: Alternatives with compatible signatures; the result keeps the first one's.
        default: Returned when every function failed (left out: the last error is raised).
        on: Errors that move on to the next function; any other error is raised at once.

    Returns:
        A function with the first one's signature, async when any of them is async.

    Raises:
        ValueError: No function given.
    """
    if not functions:
        raise ValueError("`fallback` needs at least one function")
    kinds = as_tuple(on)
    first = functions[0]

    def failed(error: Exception, index: int) -> None:
        last = index == len(functions) - 1
        if not handled(error, kinds) or (last and default is _NO_DEFAULT):
            raise error
        name = str(getattr(functions[index], "__name__", functions[index]))
        then = "the default" if last else str(getattr(functions[index + 1], "__name__", functions[index + 1]))
        note(
            "fallback", logging.INFO, "fallback: %s failed (%r), using %s", name, error, then,
            failed=name, error_type=type(error).__name__, next=then,
        )

    if any(is_async(function) for function in functions):

        @functools.wraps(first)
        async def with_fallback_async(*args: Any, **kwargs: Any) -> Any:
            for index, function in enumerate(functions):
                try:
                    result = function(*args, **kwargs)
                    return await result if inspect.isawaitable(result) else result
                except Exception as error:
                    failed(error, index)
            return default

        return with_fallback_async

    @functools.wraps(first)
    def with_fallback(*args: Any, **kwargs: Any) -> Any:
        for index, function in enumerate(functions):
            try:
                return function(*args, **kwargs)
            except Exception as error:
                failed(error, index)
        return default

    return with_fallback
