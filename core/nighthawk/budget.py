"""Budgets on what steps may spend (requests, tokens, money, wall time), and the usage they report.

A `UsageBudget` bounds one step when it is set in `StepExecutorConfiguration.step_budget`, and a group of
steps when it is opened with `nighthawk.budget(...)` (the kernel extension opens one per cell). Inside a
group every step is limited to what the group has left, so the group's limit holds however many steps a
cell starts. The limits are enforced by pydantic-ai's `UsageLimits` (requests, tokens, cost priced by
genai-prices) plus a deadline for wall time; crossing one ends the step with `BudgetExceededError` and
nothing is committed.

Steps of a group may run at once (a `nighthawk.map`, threads, tasks), so a group is also checked at every
model request, under one lock: a request is counted in every enclosing group before it is sent, and refused
when a group has no request left or has already spent its tokens or money. The request limit therefore
holds exactly; tokens and cost are known only when a response comes back, so the requests already in
flight when a group reaches its limit may still take it over by what they return.

A group can also be shared with other processes (`nighthawk.ray` hands it to a ledger on the cluster): its
figures are then kept by a `SharedAllowance`, which every process asks before each request and tells what
each step spent, so the group's request limit holds over all of them.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Literal, Protocol

from .errors import BudgetExceededError

if TYPE_CHECKING:
    from pydantic_ai.usage import UsageLimits

__all__ = [
    "BudgetScope",
    "Deadline",
    "SharedAllowance",
    "StepLimits",
    "StepUsage",
    "UsageBudget",
    "UsageLedger",
    "UsageTotals",
    "active_budgets",
    "budget",
    "budget_lock",
    "count_in_context",
    "counting",
    "opened",
    "record_usage",
    "replacing_budgets",
    "reserve_request",
    "reserve_shared_request",
    "running_step",
    "session_usage",
    "shared_budget",
    "step_deadline",
    "step_limits",
]

BudgetLevel = Literal["step", "cell"]


@dataclass(frozen=True, kw_only=True)
class UsageBudget:
    """Upper bounds on model use; `None` leaves that figure unbounded."""

    requests: int | None = None
    """Model requests (one per model response the step acted on)."""

    total_tokens: int | None = None
    """Input plus output tokens over all requests."""

    cost_usd: float | None = None
    """Money in US dollars, as priced by genai-prices (unpriced models cannot be held to it)."""

    wall_time_s: float | None = None
    """Seconds from the start of the first step to the end of the last."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"`UsageBudget.{f.name}` must be a positive number or None, got {value!r}")
            if f.name in ("requests", "total_tokens") and not isinstance(value, int):
                raise ValueError(f"`UsageBudget.{f.name}` must be a whole number, got {value!r}")

    def describe(self) -> str:
        """`requests=50, wall_time_s=600` style text (`unbounded` when nothing is set)."""
        parts = [f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name) is not None]
        return ", ".join(parts) or "unbounded"


@dataclass(frozen=True, kw_only=True)
class StepUsage:
    """What one step spent; reported for failed and interrupted steps too."""

    model: str
    """The model that answered (its label)."""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """`None` when the model has no price (a scripted or unknown model)."""
    cache_read_tokens: int = 0
    """Of `input_tokens`, those the provider read from its prompt cache (the shared start of a map's
    prompts); `cost_usd` prices them at the provider's cached rate."""
    failed_requests: int = 0
    """Of `requests`, those the provider answered with an error (HTTP 500, 401, a 429, ..., the SDK's own
    retries included): they are not billed, so they cost nothing, whatever the model's price."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class _Spending(Protocol):
    """What a usage report carries: a `StepUsage`, or the `UsageReported` event replayed from a listener."""

    @property
    def model(self) -> str: ...
    @property
    def requests(self) -> int: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def failed_requests(self) -> int: ...


@dataclass(kw_only=True)
class UsageTotals:
    """Requests, tokens and cost summed over steps (a group's, a model's, a cell's)."""

    requests: int = 0
    """Model requests sent, those the provider answered with an error (HTTP 500, ..., the retries the
    provider's SDK made by itself included); a request that never reached the provider (nothing listens, a
    batch that could not be submitted) is not counted."""
    input_tokens: int = 0
    output_tokens: int = 0
    priced_cost_usd: float = 0.0
    """The cost of the requests with a known price: all of `cost_usd` when it is known, else a lower bound."""
    unpriced_requests: int = 0
    """Requests the provider answered whose cost is unknown (a model without a price)."""
    cache_read_tokens: int = 0
    """Of `input_tokens`, those the provider read from its prompt cache (priced at its cached rate)."""
    failed_requests: int = 0
    """Of `requests`, those the provider answered with an error: not billed, so they cost 0."""

    def add(self, usage: _Spending) -> None:
        self.requests += usage.requests
        self.failed_requests += usage.failed_requests
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        if usage.cost_usd is None:
            self.unpriced_requests += usage.requests - usage.failed_requests
        else:
            self.priced_cost_usd += usage.cost_usd

    @property
    def cost_usd(self) -> float | None:
        """US dollars, or `None` when the cost is unknown: some answered request had no price. A request the
        provider refused costs 0, and so does a run that sent none (everything answered from a store)."""
        return None if self.unpriced_requests else self.priced_cost_usd

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class _Running(Protocol):
    """What a step in progress has spent so far (pydantic-ai's `RunUsage`, updated in place)."""

    @property
    def total_tokens(self) -> int: ...
    @property
    def cost(self) -> object: ...


class SharedAllowance(Protocol):
    """A group's figures kept outside this process and shared with others (a ledger on a Ray cluster)."""

    async def reserve(self) -> None:
        """Count one request about to be sent.

        Raises:
            BudgetExceededError: The group has no request left, or has spent its tokens or money.
        """
        ...

    def record(self, usage: StepUsage) -> None:
        """Add what a finished (or failed) step spent, without waiting."""
        ...


_LOCK = threading.Lock()
"""Guards the live figures of every group, so a request is counted in all its groups at once or in none."""


@dataclass(kw_only=True, eq=False)
class BudgetScope:
    """A group of steps sharing one budget (all steps of a cell, or of a `with nighthawk.budget(...)`)."""

    limit: UsageBudget
    level: BudgetLevel = "cell"
    spent: UsageTotals = field(default_factory=UsageTotals)
    """What the group's finished steps spent."""
    started: float = field(default_factory=time.monotonic)
    sent: int = field(default=0, init=False)
    """Requests sent by the group's steps, those still in flight included."""
    _running: dict[int, _Running] = field(default_factory=dict, init=False, repr=False)
    """What the group's steps in progress have spent so far, by identity."""
    shared: SharedAllowance | None = None
    """Where the group is also counted, with what other processes spend in it (set once it is shared)."""
    closed: bool = field(default=False, init=False)
    """Set by `close`: every further request is refused."""
    counts_records: bool = False
    """Whether usage recorded by hand (`UsageMeter.record`) in its context counts here too (a call measured
    by `nighthawk.resilience.budget`)."""

    @property
    def gates_requests(self) -> bool:
        """Whether each request must be checked against this group (it bounds requests, tokens or cost)."""
        limit = self.limit
        bounded = limit.requests is not None or limit.total_tokens is not None or limit.cost_usd is not None
        return bounded or self.shared is not None or self.closed

    def close(self) -> None:
        """Refuse every request the group's steps still try to send, whatever its limits: for a run that has
        ended while some of its steps go on in threads it cannot cancel."""
        self.closed = True

    def take_request(self) -> None:
        """Count one request in this group alone (a ledger keeping a shared group does this for everyone).

        Raises:
            BudgetExceededError: The group has no request left, or has spent its tokens or money.
        """
        with _LOCK:
            self._refuse_request()
            self.sent += 1

    def copy_spent(self) -> BudgetScope:
        """A new group with this one's limit, level and what its steps have spent and sent so far."""
        with _LOCK:
            copy = BudgetScope(limit=self.limit, level=self.level, spent=replace(self.spent))
            copy.sent = self.sent
        return copy

    # The figures as they stand, steps in progress and requests in flight included (read under `_LOCK`).
    def _requests(self) -> int:
        return max(self.sent, self.spent.requests)

    def _tokens(self) -> int:
        return self.spent.total_tokens + sum(running.total_tokens for running in self._running.values())

    def _cost(self) -> float:
        return self.spent.priced_cost_usd + sum(float(running.cost or 0) for running in self._running.values())  # type: ignore[arg-type]

    def _spent_now(self) -> dict[str, float]:
        return {
            "requests": self._requests(),
            "total_tokens": self._tokens(),
            "cost_usd": self._cost(),
            "wall_time_s": time.monotonic() - self.started,
        }

    def _refuse_request(self) -> None:
        """Raise when the group has nothing left of a figure bounded at each request (under `_LOCK`)."""
        if self.closed:
            raise BudgetExceededError(level=self.level, budget="requests", limit=self._requests(), reached=self._requests())
        limit = self.limit
        for name, bound, figure in (
            ("requests", limit.requests, self._requests),
            ("total_tokens", limit.total_tokens, self._tokens),
            ("cost_usd", limit.cost_usd, self._cost),
        ):
            if bound is not None and (reached := figure()) >= bound:
                raise BudgetExceededError(level=self.level, budget=name, limit=bound, reached=reached)

    def remaining(self) -> UsageBudget:
        """What a new step may still spend, or raise when the group's budget is already used up."""
        limit = self.limit
        with _LOCK:
            spent_now = self._spent_now()
        left: dict[str, float | None] = {}
        for name, figure in spent_now.items():
            bound = getattr(limit, name)
            # Each figure is read once, so the check and what is handed on cannot disagree.
            if bound is not None and figure >= bound:
                raise BudgetExceededError(level=self.level, budget=name, limit=bound, reached=figure)
            left[name] = None if bound is None else bound - figure
        return UsageBudget(**left)  # type: ignore[arg-type]


_scopes: ContextVar[tuple[BudgetScope, ...]] = ContextVar("nighthawk_budgets", default=())


@contextmanager
def budget(
    limit: UsageBudget | None = None,
    *,
    requests: int | None = None,
    total_tokens: int | None = None,
    cost_usd: float | None = None,
    wall_time_s: float | None = None,
) -> Iterator[BudgetScope]:
    """Bound everything the steps inside the `with` block spend together.

    Args:
        limit: A ready `UsageBudget`; or give its fields as keywords.
        requests: Model requests over all steps.
        total_tokens: Input plus output tokens over all steps.
        cost_usd: US dollars over all steps (priced models only).
        wall_time_s: Seconds from entering the block.

    Yields:
        The scope; `scope.spent` holds the running totals.
    """
    if limit is None:
        limit = UsageBudget(requests=requests, total_tokens=total_tokens, cost_usd=cost_usd, wall_time_s=wall_time_s)
    with opened(BudgetScope(limit=limit)) as scope:
        yield scope


@contextmanager
def counting(totals: UsageTotals) -> Iterator[BudgetScope]:
    """Add what the steps inside the `with` block spend to `totals`: an unbounded group that only counts."""
    with opened(BudgetScope(limit=UsageBudget(), spent=totals)) as scope:
        yield scope


@contextmanager
def shared_budget(allowance: SharedAllowance) -> Iterator[BudgetScope]:
    """Count the steps inside the `with` block in a group another process opened and shared (`allowance`):
    it alone bounds them, here as everywhere else it counts."""
    with opened(BudgetScope(limit=UsageBudget(), shared=allowance)) as scope:
        yield scope


@contextmanager
def opened(scope: BudgetScope) -> Iterator[BudgetScope]:
    """Count the steps inside the `with` block in `scope` too (a group made by the caller)."""
    with replacing_budgets(lambda _group: False, scope):
        yield scope


@contextmanager
def replacing_budgets(replaced: Callable[[BudgetScope], bool], scope: BudgetScope) -> Iterator[BudgetScope]:
    """Inside the `with` block, count the steps in `scope` and no longer in the enclosing groups `replaced`
    picks (a run's usage meter gives way to an inner run's)."""
    token = _scopes.set((*(group for group in _scopes.get() if not replaced(group)), scope))
    try:
        yield scope
    finally:
        _scopes.reset(token)


def budget_lock() -> threading.Lock:
    """The lock guarding every group's figures (to change or read several at once)."""
    return _LOCK


def active_budgets() -> tuple[BudgetScope, ...]:
    """The budget scopes the current step counts against, outermost first."""
    return _scopes.get()


def count_in_context(totals: UsageTotals) -> None:
    """Add what every step run in the current context spends to `totals` too: an unbounded group without a
    `with`, for a context that is dropped whole when its work ends (one item of a map)."""
    _scopes.set((*_scopes.get(), BudgetScope(limit=UsageBudget(), spent=totals)))


@dataclass(frozen=True, kw_only=True)
class StepLimits:
    """The tightest of a step's own budget and what every enclosing group has left."""

    budget: UsageBudget
    level: dict[str, BudgetLevel]
    """Which level each bounded figure comes from, so an error names the budget that was hit."""

    def usage_limits(self) -> UsageLimits:
        from decimal import Decimal

        from pydantic_ai.usage import UsageLimits

        b = self.budget
        return UsageLimits(
            # pydantic-ai applies its own default of 50 requests when none is given; we state ours instead.
            request_limit=b.requests,
            total_tokens_limit=b.total_tokens,
            cost_limit=None if b.cost_usd is None else Decimal(str(b.cost_usd)),
        )


def step_limits(step_budget: UsageBudget) -> StepLimits:
    """Combine the step's own budget with the groups it runs in (the smallest bound of each figure wins).

    Raises:
        BudgetExceededError: An enclosing group has nothing left.
    """
    chosen: dict[str, float | int | None] = {f.name: getattr(step_budget, f.name) for f in fields(step_budget)}
    level: dict[str, BudgetLevel] = {name: "step" for name, value in chosen.items() if value is not None}
    for scope in active_budgets():
        remaining = scope.remaining()
        for name in chosen:
            value = getattr(remaining, name)
            if value is not None and (chosen[name] is None or value < chosen[name]):  # type: ignore[operator]
                chosen[name] = value
                level[name] = scope.level
    return StepLimits(budget=UsageBudget(**chosen), level=level)  # type: ignore[arg-type]


@dataclass(frozen=True, kw_only=True)
class Deadline:
    """When a step must have ended, and the wall-time budget that says so."""

    at: float
    """`time.monotonic()` time of the deadline."""
    origin: float
    """When that budget's clock started: the step's start, or its group's."""
    limit: float
    level: BudgetLevel

    def exceeded(self) -> BudgetExceededError:
        """The error for a step stopped at this deadline, with the time that has really passed."""
        return BudgetExceededError(
            level=self.level, budget="wall_time_s", limit=self.limit, reached=time.monotonic() - self.origin
        )


def step_deadline(step_budget: UsageBudget) -> Deadline | None:
    """The earliest of the step's own deadline (from now) and those of the groups it runs in."""
    now = time.monotonic()
    candidates: list[Deadline] = []
    if step_budget.wall_time_s is not None:
        bound = step_budget.wall_time_s
        candidates.append(Deadline(at=now + bound, origin=now, limit=bound, level="step"))
    for scope in active_budgets():
        bound = scope.limit.wall_time_s
        if bound is not None:
            candidates.append(Deadline(at=scope.started + bound, origin=scope.started, limit=bound, level=scope.level))
    # On a tie the step's own budget is named, as `step_limits` does.
    return min(candidates, key=lambda deadline: deadline.at, default=None)


def reserve_request() -> None:
    """Count a model request about to be sent in every enclosing group that bounds spending.

    Raises:
        BudgetExceededError: A group has no request left, or has already spent its tokens or money; the
            request is then counted nowhere and must not be sent.
    """
    scopes = [scope for scope in _scopes.get() if scope.gates_requests]
    if not scopes:
        return
    with _LOCK:
        for scope in scopes:
            scope._refuse_request()
        for scope in scopes:
            scope.sent += 1


async def reserve_shared_request() -> None:
    """Count a model request about to be sent (after `reserve_request`) in every enclosing shared group.

    Raises:
        BudgetExceededError: A shared group has nothing left; the request must not be sent.
    """
    for scope in _scopes.get():
        if scope.shared is not None:
            await scope.shared.reserve()


def running_step(running: _Running) -> None:
    """Let what a step spends count in its groups' limits while it runs, before its usage is recorded
    (`record_usage(..., running=running)` ends this)."""
    with _LOCK:
        for scope in _scopes.get():
            if scope.gates_requests:
                scope._running[id(running)] = running


def record_usage(usage: StepUsage, *, running: _Running | None = None) -> None:
    """Add a finished (or failed) step's usage to every enclosing group and to the session ledger; the
    step's in-progress figures (`running_step`) are dropped in the same move, so none is counted twice."""
    scopes = active_budgets()
    with _LOCK:
        for scope in scopes:
            scope.spent.add(usage)
            if running is not None:
                scope._running.pop(id(running), None)
    for scope in scopes:
        if scope.shared is not None:
            scope.shared.record(usage)
    _LEDGER.add(usage)


class UsageLedger:
    """Usage of every step of this process, by model (what `%nighthawk usage` shows)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_model: dict[str, UsageTotals] = {}

    def add(self, usage: _Spending) -> None:
        with self._lock:
            self._by_model.setdefault(usage.model, UsageTotals()).add(usage)

    def by_model(self) -> dict[str, UsageTotals]:
        """A copy of the totals per model."""
        with self._lock:
            return {model: UsageTotals(**vars(totals)) for model, totals in self._by_model.items()}

    def reset(self) -> None:
        with self._lock:
            self._by_model.clear()


_LEDGER = UsageLedger()


def session_usage() -> UsageLedger:
    """The process-wide usage ledger (totals by model since start or the last `reset()`)."""
    return _LEDGER

