"""Stage 5a, the outcome: the strict JSON object that ends a step, checked and turned into Python terms.

The outcome is a union discriminated by `kind`. Each kind has exactly its own keys (extra keys are
rejected). Which kinds a step may use, and which exception types a `raise` may name, are per step; the
JSON schema of `raise_error_type` is an enum over those names, and the host checks the name again.

The models and `Resolution` are plain data in `step/_outcome_kinds.py`, the schema in
`step/_outcome_schema.py`, both in the step's package (a step carries its schema and records its
resolution). This module checks and evaluates an outcome against a step, and re-exports them. A return
expression is model-written code: the tool-call hooks in force (`nighthawk.oversight`) see it first, as a
call of the tool `nh_outcome` with the arguments `{"kind": "return", "return_expression": ...}`, and a
rejection evaluates nothing.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

import pydantic

from ..errors import ExecutionError, NighthawkError, StepAbortedError, ToolValidationError
from ..oversight._oversee import guarding, handling_value, review_return
from ..oversight.isolation._sessions import session_of
from ..step._boundary import ToolBoundaryError
from ..step._context import StepContext
from ..step._evaluate import Evaluation, clip, start_evaluation
from ..step._outcome_kinds import (
    OUTCOME_MODELS,
    BreakOutcome,
    ContinueOutcome,
    Outcome,
    PassOutcome,
    RaiseOutcome,
    Resolution,
    ReturnOutcome,
)
from ..step._outcome_schema import OUTCOME_KEY, OUTCOME_TOOL, outcome_object, outcome_schema
from ..step._validation import validate_value
from ..threads._loop import await_user, on_user_thread

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


def parse_outcome(data: object, step: StepContext) -> Outcome:
    """Check a final answer against the step's allowed outcomes.

    Args:
        data: A JSON string, a mapping (the `nh_outcome` arguments or the outcome object itself), or an outcome
            model instance.
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
    data = outcome_object(data)
    if not isinstance(data, dict):
        raise ExecutionError(
            f'the final answer must be a JSON object with a `kind`, sent as {{"{OUTCOME_KEY}": {{"kind": ...}}}}; '
            f"got {type(data).__name__} {str(data)[:80]}"
        )
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


async def resolve_outcome(outcome: Outcome, step: StepContext) -> Resolution:
    """Evaluate what an outcome asks for: the return value (validated) or the exception to raise.

    Before a return expression is evaluated, the tool-call hooks in force see it as a call of `nh_outcome`
    with the arguments `{"kind": "return", "return_expression": ...}`.

    Raises:
        OversightRejectedError: A tool-call hook rejected the return expression; it was not evaluated.
        ExecutionError: The return expression fails, returns an awaitable in a sync function, or does not
            fit the return annotation; or the raise names an exception type the step did not offer.
    """
    outcome = parse_outcome(outcome, step)  # the host checks again, whatever the executor enforced
    match outcome:
        case ReturnOutcome():
            return await _returned(outcome, step)
        case RaiseOutcome(raise_message=message, raise_error_type=type_name):
            message = clip(message)
            if type_name is None:
                return Resolution(outcome=outcome, exception=ExecutionError(f"Natural block raised: {message}"))
            return Resolution(outcome=outcome, exception=_exception(step.raise_types[type_name], message))
        case PassOutcome() | BreakOutcome() | ContinueOutcome():
            return Resolution(outcome=outcome)
        case _:
            assert_never(outcome)


async def _returned(outcome: ReturnOutcome, step: StepContext) -> Resolution:
    """Evaluate a return outcome's expression, reviewed by the tool-call hooks first, and validate its value."""
    expression = outcome.return_expression
    shown = clip(repr(expression), 300)
    # Evaluating it runs model-written code, like `nh_eval`: the tool-call hooks see it first.
    await review_return(step, expression)
    session = session_of(step)
    if session is not None:  # an isolated step: its child evaluates it; validated here all the same
        value, bindings, awaited = await session.returned(outcome)
        return await _isolated_resolution(step, outcome, shown, value, bindings, awaited)

    def validated(value: object, evaluation: Evaluation) -> tuple[object, dict[str, object]]:
        # A return annotation (and a walrus target's) may carry the user's validators: user code. The
        # value's own methods, which validating calls (`__iter__` for a `list`), are the model's.
        with guarding(step, OUTCOME_TOOL, blocking=True, handling=True):
            return validate_value(step.return_type, value), step.validate_bindings(evaluation.bindings())

    def evaluated() -> tuple[Evaluation, _Checked | None]:
        evaluation = start_evaluation(
            expression, step.step_locals, step.step_globals, around=guarding(step, OUTCOME_TOOL, blocking=True),
            looking=handling_value,
        )
        if evaluation.awaits or inspect.isawaitable(evaluation.value):
            return evaluation, None  # awaited on the loop first, validated after
        # Nothing to await: validate in the same visit to the user's thread, one hand-off fewer.
        return evaluation, _Checked.of(lambda: validated(evaluation.value, evaluation))

    awaited = False
    try:
        evaluation, checked = await on_user_thread(evaluated)
        value = evaluation.value
        if evaluation.awaits:  # `await` inside the expression: the step runs on a loop, so await it
            with guarding(step, OUTCOME_TOOL):
                value = await await_user(value)  # type: ignore[arg-type]
        if inspect.isawaitable(value):
            if not step.is_async:
                if inspect.iscoroutine(value):
                    value.close()
                raise ExecutionError(
                    f"`return_expression` {shown} produced an awaitable, but the function is not async"
                )
            with guarding(step, OUTCOME_TOOL):
                value = await await_user(value)
            awaited = True
    except (ExecutionError, StepAbortedError):
        raise
    except Exception as exc:
        raise ExecutionError(clip(f"`return_expression` {shown} raised {type(exc).__name__}: {exc}")) from exc
    try:
        if checked is None:
            checked = await on_user_thread(lambda: _Checked.of(lambda: validated(value, evaluation)))
        value, bindings = checked.result()
    except ToolValidationError as exc:
        raise ExecutionError(
            f"return value of {shown} does not match the return annotation: {exc}"
        ) from exc
    except ToolBoundaryError as exc:
        if exc.kind == "internal":
            raise NighthawkError(exc.message) from exc
        raise ExecutionError(f"`return_expression` {shown}: {exc.message}") from exc
    step.step_locals.update(bindings)
    return Resolution(outcome=outcome, value=value, awaited=awaited)


async def _isolated_resolution(
    step: StepContext, outcome: ReturnOutcome, shown: str, value: object, bindings: dict[str, object], awaited: bool
) -> Resolution:
    """The resolution of a return expression an isolated child evaluated: its value and bindings validated
    in the kernel (the user's validators run here, on values that crossed from the child)."""
    try:
        value, bindings = await on_user_thread(
            lambda: (validate_value(step.return_type, value), step.validate_bindings(bindings))
        )
    except ToolValidationError as exc:
        raise ExecutionError(f"return value of {shown} does not match the return annotation: {exc}") from exc
    except ToolBoundaryError as exc:
        raise ExecutionError(f"`return_expression` {shown}: {exc.message}") from exc
    step.step_locals.update(bindings)
    return Resolution(outcome=outcome, value=value, awaited=awaited)


@dataclass(frozen=True)
class _Checked:
    """The validated return value and bindings, or the exception validating raised (re-raised by `result`
    outside the evaluation's error handling, so it reads as a validation failure, not the expression's)."""

    value: tuple[object, dict[str, object]] | None
    error: Exception | None

    @classmethod
    def of(cls, validate: Callable[[], tuple[object, dict[str, object]]]) -> _Checked:
        try:
            return cls(validate(), None)
        except Exception as exc:  # noqa: BLE001 - re-raised by `result`
            return cls(None, exc)

    def result(self) -> tuple[object, dict[str, object]]:
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value


def _exception(error_type: type[BaseException], message: str) -> BaseException:
    """`error_type(message)`, or an ExecutionError when the type's constructor needs more than a message."""
    try:
        return error_type(message)
    except Exception as exc:
        raise ExecutionError(
            f"cannot raise {error_type.__name__} with only a message ({type(exc).__name__}: {clip(str(exc), 300)}); "
            "choose an exception type that takes a message, or omit `raise_error_type`"
        ) from exc
