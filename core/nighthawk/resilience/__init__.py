"""Function transformers that make natural functions (or any callable) resilient: each takes a callable and
returns one with the same signature, sync or async as the original, so they compose by nesting.

Loaded on first use (`nighthawk.resilience` or `nh.resilience`), never by `import nighthawk`. Recommended
order, innermost first: `timeout`, `budget`, `vote`, `retrying`, `circuit_breaker`, `fallback`.

None of them swallows an interrupt: `KeyboardInterrupt`, a cancelled task and `StepAbortedError` (user code
of a step was stopped) go straight through every transformer.
"""

from __future__ import annotations

from ._budget import BudgetExceededError, budget
from ._circuit import CircuitOpenError, CircuitState, circuit_breaker
from ._fallback import fallback
from ._retry import RetryCallState, Retrying, retrying
from ._timeout import timeout
from ._vote import plurality, vote

__all__ = [
    "BudgetExceededError",
    "CircuitOpenError",
    "CircuitState",
    "RetryCallState",
    "Retrying",
    "budget",
    "circuit_breaker",
    "fallback",
    "plurality",
    "retrying",
    "timeout",
    "vote",
]
