"""The outcome object that ends a step: its kinds as pydantic models, and what one resolves to.

Plain data, below the step: the step records its `Resolution`. Checking an outcome against a step and
evaluating it is `outcome.py`'s job; the JSON schema offered to the model is `_outcome_schema.py`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, TypeAlias

import pydantic

__all__ = [
    "OUTCOME_MODELS",
    "BreakOutcome",
    "ContinueOutcome",
    "Outcome",
    "PassOutcome",
    "RaiseOutcome",
    "Resolution",
    "ReturnOutcome",
]


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class PassOutcome(_Strict):
    """Finish the step; the program continues after the block."""

    kind: Literal["pass"]


class ReturnOutcome(_Strict):
    """Finish the step and return the value of `return_expression` from the enclosing function."""

    kind: Literal["return"]
    return_expression: str = pydantic.Field(description="Python expression for the value to return.")


class BreakOutcome(_Strict):
    """Finish the step and break out of the enclosing loop."""

    kind: Literal["break"]


class ContinueOutcome(_Strict):
    """Finish the step and continue with the next iteration of the enclosing loop."""

    kind: Literal["continue"]


class RaiseOutcome(_Strict):
    """Finish the step by raising an exception in the program, when it cannot be done."""

    kind: Literal["raise"]
    raise_message: str
    raise_error_type: str | None = None


Outcome: TypeAlias = Annotated[
    PassOutcome | ReturnOutcome | BreakOutcome | ContinueOutcome | RaiseOutcome, pydantic.Discriminator("kind")
]

OUTCOME_MODELS: dict[str, type[_Strict]] = {
    "pass": PassOutcome,
    "return": ReturnOutcome,
    "break": BreakOutcome,
    "continue": ContinueOutcome,
    "raise": RaiseOutcome,
}


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """An outcome turned into Python terms."""

    outcome: Outcome
    value: object = None
    """The validated return value (`return` only)."""
    exception: BaseException | None = None
    """The exception to raise (`raise` only)."""
    awaited: bool = False
    """The runtime awaited the awaitable the `return_expression` gave (an async function's block)."""

    @property
    def kind(self) -> str:
        return self.outcome.kind
