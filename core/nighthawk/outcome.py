"""Stage 5a, the outcome: the strict JSON object that ends a step, checked and turned into Python terms.

The outcome is a union discriminated by `kind`. Each kind has exactly its own keys (extra keys are
rejected). Which kinds a step may use, and which exception types a `raise` may name, are per step; the
JSON schema of `raise_error_type` is an enum over those names, and the host checks the name again.
"""

from __future__ import annotations

import functools
import inspect
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias, assert_never

import pydantic

from ._evaluate import evaluate
from ._validation import validate_value
from .errors import ExecutionError, ToolValidationError

if TYPE_CHECKING:
    from .step import StepContext

__all__ = [
    "BreakOutcome",
    "ContinueOutcome",
    "Outcome",
    "PassOutcome",
    "RaiseOutcome",
    "Resolution",
    "ReturnOutcome",
    "parse_outcome",
    "resolve_outcome",
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


@functools.lru_cache(maxsize=128)
def outcome_models(allowed: tuple[str, ...], raise_types: tuple[str, ...]) -> tuple[type[_Strict], ...]:
    """The outcome model of each allowed kind, with `raise_error_type` narrowed to an enum of `raise_types`."""
    models: list[type[_Strict]] = []
    for kind in allowed:
        model = OUTCOME_MODELS[kind]
        if kind == "raise":
            model = pydantic.create_model(
                "RaiseOutcome",
                __base__=RaiseOutcome,
                __doc__=RaiseOutcome.__doc__,
                raise_error_type=(
                    Literal[raise_types] | None,  # type: ignore[valid-type]
                    pydantic.Field(None, description="Exception type to raise; omit for a generic failure."),
                ),
            )
        models.append(model)
    return tuple(models)


def parse_outcome(data: object, step: StepContext) -> Outcome:
    """Check a final answer against the step's allowed outcomes.

    Args:
        data: A JSON string, a mapping, or an outcome model instance.
        step: The step the answer ends.

    Raises:
        ExecutionError: Not JSON, not an object, unknown or disallowed kind, wrong keys, or an exception type
            the step did not offer.
    """
    if isinstance(data, pydantic.BaseModel):
        data = data.model_dump(exclude_unset=True)
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise ExecutionError(f"the final answer is not JSON: {str(data)[:200]!r}") from exc
    if not isinstance(data, dict):
        raise ExecutionError(f"the final answer must be a JSON object with a `kind`, got {type(data).__name__}")
    kind = data.get("kind")
    if kind not in OUTCOME_MODELS:
        raise ExecutionError(f"unknown outcome kind {kind!r}; expected one of {list(step.allowed_outcomes)}")
    if kind not in step.allowed_outcomes:
        raise ExecutionError(
            f"outcome {kind!r} is not allowed for this block (allowed: {', '.join(step.allowed_outcomes)})"
        )
    model = OUTCOME_MODELS[kind]
    try:
        outcome = model.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or kind}: {e['msg']}" for e in exc.errors())
        raise ExecutionError(f"invalid {kind!r} outcome: {problems}") from None
    if isinstance(outcome, RaiseOutcome) and outcome.raise_error_type is not None:
        if outcome.raise_error_type not in step.raise_types:
            raise ExecutionError(
                f"`raise_error_type` {outcome.raise_error_type!r} is not one of the exception types offered to "
                f"the block: {sorted(step.raise_types)}"
            )
    return outcome  # type: ignore[return-value]


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """An outcome turned into Python terms."""

    outcome: Outcome
    value: object = None
    """The validated return value (`return` only)."""
    exception: BaseException | None = None
    """The exception to raise (`raise` only)."""

    @property
    def kind(self) -> str:
        return self.outcome.kind


async def resolve_outcome(outcome: Outcome, step: StepContext) -> Resolution:
    """Evaluate what an outcome asks for: the return value (validated) or the exception to raise.

    Raises:
        ExecutionError: The return expression fails, returns an awaitable in a sync function, or does not
            fit the return annotation; or the raise names an exception type the step did not offer.
    """
    outcome = parse_outcome(outcome, step)  # the host checks again, whatever the executor enforced
    match outcome:
        case ReturnOutcome(return_expression=expression):
            try:
                value = evaluate(expression, step.step_locals, step.step_globals)
            except Exception as exc:
                raise ExecutionError(
                    f"`return_expression` {expression!r} raised {type(exc).__name__}: {exc}"
                ) from exc
            if inspect.isawaitable(value):
                if not step.is_async:
                    if inspect.iscoroutine(value):
                        value.close()
                    raise ExecutionError(
                        f"`return_expression` {expression!r} produced an awaitable, but the function is not async"
                    )
                value = await value
            try:
                value = validate_value(step.return_type, value)
            except ToolValidationError as exc:
                raise ExecutionError(f"return value of {expression!r} does not match the return annotation: {exc}") from exc
            return Resolution(outcome=outcome, value=value)
        case RaiseOutcome(raise_message=message, raise_error_type=type_name):
            if type_name is None:
                return Resolution(outcome=outcome, exception=ExecutionError(f"Natural block raised: {message}"))
            return Resolution(outcome=outcome, exception=step.raise_types[type_name](message))
        case PassOutcome() | BreakOutcome() | ContinueOutcome():
            return Resolution(outcome=outcome)
        case _:
            assert_never(outcome)
