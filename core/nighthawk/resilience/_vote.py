"""`vote` and `plurality`: call a function several times and keep the answer most calls agree on."""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._calls import handled, is_async

__all__ = ["plurality", "vote"]

T = TypeVar("T")


def plurality(results: Sequence[T]) -> T:
    """The value given most often (compared with `==`, so dicts and lists count too); on a tie, the one
    that reached that count first.

    Raises:
        ValueError: `results` is empty.
    """
    if not results:
        raise ValueError("`plurality` requires at least one result")
    distinct: list[T] = []
    counts: list[int] = []
    for value in results:
        for index, seen in enumerate(distinct):
            if seen == value:
                counts[index] += 1
                break
        else:
            distinct.append(value)
            counts.append(1)
    return distinct[counts.index(max(counts))]


def vote(
    *, count: int = 3, min_success: int | None = None, decide: Callable[[list[Any]], Any] = plurality
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Call the function `count` times with the same arguments and `decide` among the answers.

    Sync functions are called one after the other on the caller's thread (inside `nighthawk.map`, like any
    item); async ones are awaited together. Failed calls are left out of the decision.

    Args:
        count: Calls per vote.
        min_success: Calls that must succeed (default: half of `count`, rounded up); with fewer, the last
            error is raised.
        decide: Picks the answer from the successful results (default `plurality`).

    Raises:
        ValueError: `count` below 1, or `min_success` outside 1..count.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"`count` must be at least 1, got {count!r}")
    needed = math.ceil(count / 2) if min_success is None else min_success
    if isinstance(needed, bool) or not isinstance(needed, int) or not 1 <= needed <= count:
        raise ValueError(f"`min_success` must be between 1 and count ({count}), got {min_success!r}")

    def decided(results: list[Any], errors: list[Exception]) -> Any:
        if len(results) < needed:
            raise errors[-1]
        return decide(results)

    def transform(function: Callable[..., Any]) -> Callable[..., Any]:
        if is_async(function):

            @functools.wraps(function)
            async def voted_async(*args: Any, **kwargs: Any) -> Any:
                outcomes = await asyncio.gather(*(function(*args, **kwargs) for _ in range(count)), return_exceptions=True)
                results: list[Any] = []
                errors: list[Exception] = []
                for outcome in outcomes:
                    if isinstance(outcome, BaseException):
                        if not handled(outcome, (Exception,)):
                            raise outcome  # an interrupt or a cancelled call ends the vote
                        errors.append(outcome)  # type: ignore[arg-type]
                    else:
                        results.append(outcome)
                return decided(results, errors)

            return voted_async

        @functools.wraps(function)
        def voted(*args: Any, **kwargs: Any) -> Any:
            results: list[Any] = []
            errors: list[Exception] = []
            for _ in range(count):
                try:
                    results.append(function(*args, **kwargs))
                except Exception as error:
                    if not handled(error, (Exception,)):
                        raise
                    errors.append(error)
            return decided(results, errors)

        return voted

    return transform
