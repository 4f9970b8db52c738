"""Budget groups reaching a Ray cluster: one small ledger actor keeps each group's figures for everyone.

`nighthawk.ray.map_batches` called inside `with nighthawk.budget(...)` (or a notebook cell with a cell
budget) hands each enclosing group that bounds requests, tokens or cost to a ledger actor, seeded with what
the group has spent so far. From then on every request of the group, from any actor or from this process,
is reserved at the ledger before it is sent, and every step's usage is added there; the ledger refuses
requests as the group would. Ray runs one call of an actor at a time, so two reservations never race.

Imported by `nighthawk.ray` only (the map machinery, which it sits beside, never imports it): `import nighthawk` never imports Ray.
"""

from __future__ import annotations

from typing import Any

import ray

from ..budget import BudgetScope, SharedAllowance, StepUsage, active_budgets
from ..errors import BudgetExceededError

__all__ = ["RayAllowance", "cluster_allowances"]


class _Ledger:
    """The actor holding one group: a plain group of its own, counting for every process."""

    def __init__(self, group: BudgetScope) -> None:
        self.group = group

    def reserve(self) -> tuple[str, str, float, float] | None:
        """`None` when the request is counted, else the refusal's figures (an error would arrive wrapped)."""
        try:
            self.group.take_request()
        except BudgetExceededError as refused:
            return refused.level, refused.budget, refused.limit, refused.reached
        return None

    def record(self, usage: StepUsage) -> None:
        self.group.spent.add(usage)


class RayAllowance:
    """A group shared through a ledger actor; sent to the actors inside `nighthawk.ray`'s callable."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger
        """The ledger's actor handle (it lives as long as a handle does)."""

    async def reserve(self) -> None:
        refused = await self.ledger.reserve.remote()
        if refused is not None:
            level, budget, limit, reached = refused
            raise BudgetExceededError(level=level, budget=budget, limit=limit, reached=reached)

    def record(self, usage: StepUsage) -> None:
        self.ledger.record.remote(usage)  # not awaited: the step is over, the next reservation reads it


def cluster_allowances() -> tuple[SharedAllowance, ...]:
    """The groups in force here that bound requests, tokens or cost, each handed to a ledger actor (once:
    a second dataset in the same group shares its ledger)."""
    allowances = []
    for scope in active_budgets():
        if not scope.gates_requests:
            continue
        if scope.shared is None:
            # The group's own steps go through the ledger from now on too (the gate awaits it), so what they
            # spend and what the actors spend are counted against one limit.
            ledger = ray.remote(num_cpus=0)(_Ledger).remote(scope.copy_spent())
            scope.shared = RayAllowance(ledger)
        allowances.append(scope.shared)
    return tuple(allowances)
