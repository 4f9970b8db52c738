"""`budget`: bound the tokens or money of a function's calls, each and in all, from the usage the budget
groups already count."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .. import errors
from ..budget import BudgetScope, UsageBudget, UsageTotals, budget_lock, opened
from ..road.runtime import get_current_usage_meter
from ._calls import is_async, note

__all__ = ["BudgetExceededError", "budget"]

LimitKind = Literal["tokens", "tokens_per_call", "cost", "cost_per_call"]


class BudgetExceededError(errors.BudgetExceededError):
    """A `resilience.budget(...)` limit was reached. It is a `nighthawk.BudgetExceededError` (level
    `call`), so one `except` catches both kinds of budget."""

    def __init__(self, *, limit_kind: LimitKind, limit_value: float, call_usage: Any, accumulated_usage: Any, reached: float) -> None:
        self.limit_kind = limit_kind
        self.limit_value = limit_value
        self.call_usage = call_usage
        """What the call spent (a pydantic-ai `RunUsage`; zero when it was refused before being called)."""
        self.accumulated_usage = accumulated_usage
        """What the run had spent at the check (a pydantic-ai `RunUsage`)."""
        self.level, self.budget, self.limit, self.reached = "call", limit_kind, limit_value, reached
        self.partial = None
        errors.ExecutionError.__init__(
            self,
            f"budget exceeded: {limit_kind} limit {limit_value:g} reached ({reached:g}); "
            + ("the call was not made" if call_usage.total_tokens == 0 and limit_kind in ("tokens", "cost") else "nothing more is spent on it"),
        )


def _run_usage(totals: UsageTotals) -> Any:
    from pydantic_ai.usage import RunUsage  # only once a budget is checked: pydantic-ai is heavy

    return RunUsage(requests=totals.requests, input_tokens=totals.input_tokens, output_tokens=totals.output_tokens)


def budget(
    *,
    tokens: int | None = None,
    tokens_per_call: int | None = None,
    cost: float | None = None,
    cost_per_call: float | None = None,
    cost_function: Callable[[Any], float] | None = None,
    estimate_usage: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Bound what calls of a function spend.

    A call is measured like a `nighthawk.budget` group: its steps count there as in every enclosing group, so
    both see the same figures. `tokens` and `cost` bound the whole run (read from its `UsageMeter`): a call
    is refused when the run has already reached them, and raises after it when the call took the run past
    them. `tokens_per_call` and `cost_per_call` bound one call, checked when it returns. Outside
    `nighthawk.run(...)` there is no run meter, so only the per-call limits apply.

    Args:
        tokens: Input plus output tokens of the run.
        tokens_per_call: Tokens of one call.
        cost: Money of the run, as `cost_function` prices it.
        cost_per_call: Money of one call.
        cost_function: Price of a pydantic-ai `RunUsage` (needed for `cost` and `cost_per_call`).
        estimate_usage: Called with the call's arguments, returns the `RunUsage` the call is expected to take:
            the call is refused beforehand when the run plus that estimate would pass `tokens` or `cost`.

    Raises:
        ValueError: No limit given, or a cost limit without `cost_function`.
    """
    if all(limit is None for limit in (tokens, tokens_per_call, cost, cost_per_call)):
        raise ValueError("`budget` requires at least one of tokens, tokens_per_call, cost, cost_per_call")
    if (cost is not None or cost_per_call is not None) and cost_function is None:
        raise ValueError("a `cost` or `cost_per_call` limit needs a `cost_function` to price usage")
    limits = _Limits(
        tokens=tokens, tokens_per_call=tokens_per_call, cost=cost, cost_per_call=cost_per_call,
        cost_function=cost_function, estimate_usage=estimate_usage,
    )

    def transform(function: Callable[..., Any]) -> Callable[..., Any]:
        return _budgeted(function, limits)

    return transform


@dataclass(frozen=True, kw_only=True)
class _Limits:
    """The limits of one `budget(...)`, checked around each call of the functions it bounds."""

    tokens: int | None
    tokens_per_call: int | None
    cost: float | None
    cost_per_call: float | None
    cost_function: Callable[[Any], float] | None
    estimate_usage: Callable[..., Any] | None

    def check_before(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Refuse a call when the run has reached `tokens` or `cost`, or would pass them with the call's estimate."""
        tokens, cost, cost_function = self.tokens, self.cost, self.cost_function
        meter = get_current_usage_meter()
        if meter is None or (tokens is None and cost is None):
            return
        run = _run_usage(meter.totals())
        expected = self.estimate_usage(*args, **kwargs) if self.estimate_usage is not None else None
        nothing = _run_usage(UsageTotals())
        if tokens is not None:
            reached = run.total_tokens + (expected.total_tokens if expected is not None else 0)
            if run.total_tokens >= tokens or reached > tokens:
                raise _exceeded("tokens", tokens, reached, nothing, run)
        if cost is not None and cost_function is not None:
            spent = cost_function(run) + (cost_function(expected) if expected is not None else 0.0)
            if cost_function(run) >= cost or spent > cost:
                raise _exceeded("cost", cost, spent, nothing, run)

    def check_after(self, group: BudgetScope) -> None:
        """Raise when the call (measured by `group`) passed a per-call limit, or took the run past `tokens` or `cost`."""
        tokens, cost, cost_function = self.tokens, self.cost, self.cost_function
        with budget_lock():
            call = _run_usage(group.spent)
        meter = get_current_usage_meter()
        run = _run_usage(meter.totals()) if meter is not None else call
        if self.tokens_per_call is not None and call.total_tokens > self.tokens_per_call:
            raise _exceeded("tokens_per_call", self.tokens_per_call, call.total_tokens, call, run)
        if self.cost_per_call is not None and cost_function is not None and (spent := cost_function(call)) > self.cost_per_call:
            raise _exceeded("cost_per_call", self.cost_per_call, spent, call, run)
        if meter is None:
            return
        if tokens is not None and run.total_tokens > tokens:
            raise _exceeded("tokens", tokens, run.total_tokens, call, run)
        if cost is not None and cost_function is not None and (spent := cost_function(run)) > cost:
            raise _exceeded("cost", cost, spent, call, run)


def _exceeded(kind: LimitKind, limit: float, reached: float, call: Any, run: Any) -> BudgetExceededError:
    """The error of a reached limit, logged as it is made."""
    note(
        "budget_exceeded", logging.WARNING, "Budget exceeded: %s limit %g reached (%g)", kind, limit, reached,
        limit_kind=kind, limit=limit, reached=reached,
    )
    return BudgetExceededError(limit_kind=kind, limit_value=limit, call_usage=call, accumulated_usage=run, reached=reached)


def _call_group() -> BudgetScope:
    # Unbounded: it measures the call; the limits are checked around it, so they never stop a step half-way.
    return BudgetScope(limit=UsageBudget(), counts_records=True)


def _budgeted(function: Callable[..., Any], limits: _Limits) -> Callable[..., Any]:
    """`function` with `limits` checked before and after each call, which a budget group measures."""
    if is_async(function):

        @functools.wraps(function)
        async def budgeted_async(*args: Any, **kwargs: Any) -> Any:
            limits.check_before(args, kwargs)
            with opened(_call_group()) as group:
                result = await function(*args, **kwargs)
            limits.check_after(group)
            return result

        return budgeted_async

    @functools.wraps(function)
    def budgeted(*args: Any, **kwargs: Any) -> Any:
        limits.check_before(args, kwargs)
        with opened(_call_group()) as group:
            result = function(*args, **kwargs)
        limits.check_after(group)
        return result

    return budgeted
