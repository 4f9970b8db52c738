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

from ._evaluate import clip, start_evaluation
from ._validation import validate_value
from .errors import ExecutionError, NighthawkError, StepAbortedError, ToolValidationError
from .tools import ToolBoundaryError

if TYPE_CHECKING:
    from .step import StepContext

__all__ = [
    "OUTCOME_TOOL",
    "BreakOutcome",
    "ContinueOutcome",
    "Outcome",
    "PassOutcome",
    "RaiseOutcome",
    "Resolution",
    "ReturnOutcome",
    "outcome_schema",
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


OUTCOME_TOOL = "nh_outcome"
"""The one output tool that ends a step; its arguments are the outcome object."""


def outcome_schema(allowed: tuple[str, ...], raise_types: tuple[str, ...]) -> dict[str, object]:
    """The JSON schema of the outcome object a step may end with.

    One flat object keeps the tool definition short (one tool instead of one per kind, no per-kind
    titles or descriptions: the system prompt explains the kinds once). `kind` is an enum of the allowed
    kinds and `raise_error_type` an enum of the offered exception names; which keys go with which kind is
    enforced by `parse_outcome`, whose refusal reaches the model as a correction.
    """
    properties: dict[str, object] = {"kind": {"type": "string", "enum": list(allowed)}}
    if "return" in allowed:
        properties["return_expression"] = {"type": "string"}
    if "raise" in allowed:
        properties["raise_message"] = {"type": "string"}
        properties["raise_error_type"] = {"type": "string", "enum": list(raise_types)}
    return {"type": "object", "properties": properties, "required": ["kind"], "additionalProperties": False}


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
            from ._loop import await_user, on_user_thread

            shown = clip(repr(expression), 300)
            try:
                evaluation = await on_user_thread(
                    lambda: start_evaluation(expression, step.step_locals, step.step_globals)
                )
                value = evaluation.value
                if evaluation.awaits:  # `await` inside the expression: the step runs on a loop, so await it
                    value = await await_user(value)  # type: ignore[arg-type]
                if inspect.isawaitable(value):
                    if not step.is_async:
                        if inspect.iscoroutine(value):
                            value.close()
                        raise ExecutionError(
                            f"`return_expression` {shown} produced an awaitable, but the function is not async"
                        )
                    value = await await_user(value)
            except (ExecutionError, StepAbortedError):
                raise
            except Exception as exc:
                raise ExecutionError(clip(f"`return_expression` {shown} raised {type(exc).__name__}: {exc}")) from exc
            try:
                # A return annotation (and a walrus target's) may carry the user's validators: user code.
                value, bindings = await on_user_thread(
                    lambda: (validate_value(step.return_type, value), step.validate_bindings(evaluation.bindings()))
                )
            except ToolValidationError as exc:
                raise ExecutionError(
                    f"return value of {shown} does not match the return annotation: {exc}"
                ) from exc
            except ToolBoundaryError as exc:
                if exc.kind == "internal":
                    raise NighthawkError(exc.message) from exc
                raise ExecutionError(f"`return_expression` {shown}: {exc.message}") from exc
            step.step_locals.update(bindings)
            return Resolution(outcome=outcome, value=value)
        case RaiseOutcome(raise_message=message, raise_error_type=type_name):
            message = clip(message)
            if type_name is None:
                return Resolution(outcome=outcome, exception=ExecutionError(f"Natural block raised: {message}"))
            return Resolution(outcome=outcome, exception=_exception(step.raise_types[type_name], message))
        case PassOutcome() | BreakOutcome() | ContinueOutcome():
            return Resolution(outcome=outcome)
        case _:
            assert_never(outcome)


def _exception(error_type: type[BaseException], message: str) -> BaseException:
    """`error_type(message)`, or an ExecutionError when the type's constructor needs more than a message."""
    try:
        return error_type(message)
    except Exception as exc:
        raise ExecutionError(
            f"cannot raise {error_type.__name__} with only a message ({type(exc).__name__}: {clip(str(exc), 300)}); "
            "choose an exception type that takes a message, or omit `raise_error_type`"
        ) from exc
