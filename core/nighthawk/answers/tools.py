"""Tools the model calls during a step: the built-in `nh_eval` and `nh_assign`, and user tools.

Every tool answers with the same envelope, `{"value": ..., "error": null}` or
`{"value": null, "error": {"kind", "message", "guidance"}}`, so a failed call never aborts the step:
the model reads the error and tries again. The `@tool` registry (`step/_tool_registry.py`) and the error a
tool reports (`step/_boundary.py`) live in the step's package and are re-exported here.
"""

from __future__ import annotations

import inspect
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import events
from ..errors import OperationRefusedError, StepAbortedError, ToolEvaluationError, ToolValidationError
from ..oversight._oversee import guarding, handling_value, review_tool_call
from ..oversight.isolation._sessions import Rendered, session_of
from ..secrets._scrubber import current_scrubber
from ..step._boundary import ErrorKind, ToolBoundaryError
from ..step._context import StepContext
from ..step._evaluate import Evaluation, clip, start_evaluation
from ..step._tool_registry import ToolDefinition, ToolScope, push_tool_scope, tool, visible_tools
from ..step._validation import ValidationSetupError, declared_attribute_type, type_label, validate_value

__all__ = [
    "ErrorKind",
    "ToolBoundaryError",
    "ToolDefinition",
    "ToolScope",
    "assign_value",
    "eval_expression",
    "evaluated_value",
    "guarded",
    "invoke_tool",
    "push_tool_scope",
    "rendered_result",
    "tool",
    "visible_tools",
]


_TARGET_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_TRANSIENT = (TimeoutError, ConnectionError)
_PLAIN = frozenset({int, float, bool, str, bytes, type(None)})
"""Types whose rendering runs no user code: rendered where the tool call ends, saving a trip to the user's thread."""

T = TypeVar("T")

_AWAITING = object()  # the expression's value must be awaited before `then` can run

_MODEL_VALUED = frozenset({"nh_eval", "nh_assign"})
"""The tools whose result is a value model-written code made (rendered under the step's runtime guards)."""


def guarded(step: StepContext, tool_name: str, work: Callable[[], T]) -> T:
    """`work()` under the runtime guards in force, as Nighthawk's own handling of a value model-written code
    made (on the calling thread): the value's methods are held, the user's own functions are not."""
    with guarding(step, tool_name, blocking=True, handling=True):
        return work()


# --- envelopes --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Evaluated:
    """A built-in tool's value with the warnings raised while computing it (shown to the model, not printed)."""

    value: object
    warnings: tuple[str, ...]
    awaited: bool = False
    """The expression gave an awaitable that the runtime awaited (no `await` of its own did)."""


def _success(step: StepContext, value: object) -> tuple[str, str]:
    caught: tuple[str, ...] = ()
    if isinstance(value, _Evaluated):
        value, caught = value.value, value.warnings
    # Masked by name and shape while rendering; the step's secret values go too (`str(conn)`, `db_password`).
    scrub = current_scrubber().scrub
    rendered = scrub(step.rendering.render(value, step.rendering.limits.tool_result_max_tokens))
    envelope = '{"value": ' + rendered + ', "error": null'
    if caught:
        envelope += ', "warnings": ' + json.dumps([clip(scrub(text), 500) for text in caught[:5]], ensure_ascii=False)
    return envelope + "}", rendered


def rendered_result(step: StepContext, value: object) -> tuple[str, str, bool]:
    """A built-in tool's envelope and preview, rendered where its value was made (an isolated step's child,
    which sends them to the kernel as text), and whether the value was awaited."""
    return (*_success(step, value), isinstance(value, _Evaluated) and value.awaited)


def _failure(step: StepContext, error: ToolBoundaryError) -> str:
    scrub = current_scrubber().scrub
    payload = {"kind": error.kind, "message": clip(scrub(error.message)), "guidance": error.guidance}
    return json.dumps({"value": None, "error": payload}, ensure_ascii=False)


def _describe(exc: BaseException) -> str:
    return clip(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def _evaluation_error(expression: str, exc: Exception) -> ToolBoundaryError:
    if isinstance(exc, SyntaxError):
        return ToolBoundaryError(
            "invalid_input",
            f"not a single Python expression: {clip(repr(expression), 300)} ({exc.msg})",
            "Pass one expression; statements such as `x = 1` or `import m` are not accepted.",
        )
    if isinstance(exc, NameError):
        return ToolBoundaryError(
            "resolution", _describe(exc), "Use a name listed in LOCALS or GLOBALS, or a builtin."
        )
    if isinstance(exc, OperationRefusedError):  # a runtime policy: its message says what and why, then what to do
        message, _, guidance = str(exc).partition("\n")
        return ToolBoundaryError("execution", clip(f"{type(exc).__name__}: {message}"), guidance)
    if isinstance(exc, _TRANSIENT):
        return ToolBoundaryError("transient", _describe(exc), "This may succeed if you try again.")
    return ToolBoundaryError(
        "execution", _describe(exc), "Fix the expression, or inspect the values involved with nh_eval first."
    )


async def _evaluate_awaiting(
    step: StepContext, tool_name: str, expression: str, then: Callable[[object, dict[str, object]], object]
) -> object:
    """Evaluate `expression` on the user's thread (awaiting an awaitable result on the step's loop), validate
    the names it bound with `:=`, and hand value and bindings to `then` (which stores what it must and
    returns the tool's value), on the user's thread too: in the same trip when nothing needs awaiting.

    The result carries the warnings the expression raised, for the model to read.
    """
    from ..threads._loop import await_user, on_user_thread  # here, not at the top: `import nighthawk` stays free of asyncio

    evaluation: Evaluation | None = None

    def finish(value: object) -> object:
        assert evaluation is not None
        # Still the model's code at work: validating and storing its value, and the preview of it, call the
        # value's own methods, which a model-made object may have set to any function of Python's.
        with guarding(step, tool_name, blocking=True, handling=True):
            return then(value, step.validate_bindings(evaluation.bindings()))

    def start() -> object:
        nonlocal evaluation
        try:
            evaluation = start_evaluation(
                expression, step.step_locals, step.step_globals, around=guarding(step, tool_name, blocking=True),
                looking=handling_value,
            )
        except Exception as exc:
            raise _evaluation_error(expression, exc) from ToolEvaluationError(_describe(exc))
        return _AWAITING if inspect.isawaitable(evaluation.value) else finish(evaluation.value)

    result = await on_user_thread(start)
    assert evaluation is not None
    if result is _AWAITING:
        try:
            with guarding(step, tool_name):  # the model's coroutine is model-written code too
                value = await await_user(evaluation.value)  # type: ignore[arg-type]
        except (ToolBoundaryError, StepAbortedError):
            raise
        except Exception as exc:
            raise _evaluation_error(expression, exc) from ToolEvaluationError(_describe(exc))
        result = await on_user_thread(lambda: finish(value))
        if not evaluation.awaits:
            return _Evaluated(value=result, warnings=tuple(evaluation.warnings), awaited=True)
    return _Evaluated(value=result, warnings=tuple(evaluation.warnings)) if evaluation.warnings else result


def evaluated_value(result: object) -> object:
    """The value a built-in tool computed, without the warnings its result may carry."""
    return result.value if isinstance(result, _Evaluated) else result


# --- built-in tools ---------------------------------------------------------------------------------


async def eval_expression(step: StepContext, expression: str) -> object:
    """`nh_eval`: evaluate an expression against the step's variables (awaiting an awaitable result).

    Names bound with `:=` are validated like assignments and stored only if all of them fit.
    """
    session = session_of(step)
    if session is not None:  # an isolated step: its child evaluates it
        return await session.tool("nh_eval", {"expression": expression})

    def keep_bindings(value: object, bindings: dict[str, object]) -> object:
        step.step_locals.update(bindings)
        return value

    return await _evaluate_awaiting(step, "nh_eval", expression, then=keep_bindings)


async def assign_value(step: StepContext, target_path: str, expression: str) -> object:
    """`nh_assign`: evaluate `expression` and store it at `target_path`; all or nothing.

    A bare name goes into step locals, validated against its write binding's type. A dotted path sets an
    attribute of an object in step locals, validated when the owner declares the attribute's type.
    """
    session = session_of(step)
    if session is not None:  # an isolated step: its child evaluates and stores it
        return await session.tool("nh_assign", {"target_path": target_path, "expression": expression})
    if not _TARGET_PATH.match(target_path):
        raise ToolBoundaryError(
            "invalid_input",
            f"invalid target_path {target_path!r}",
            "Use `name` or `name.attr.attr` with plain ASCII identifiers.",
        )
    segments = target_path.split(".")
    if any(segment.startswith("__") for segment in segments):
        raise ToolBoundaryError(
            "invalid_input", f"target_path {target_path!r} names a dunder attribute", "Dunder targets are reserved."
        )
    from ..threads._loop import on_user_thread  # here, not at the top: `import nighthawk` stays free of asyncio

    root, *attributes = segments
    owner: object = None
    if attributes:
        # Resolve the owner before evaluating, so a bad path fails without running the expression.
        if root not in step.step_locals:
            raise ToolBoundaryError(
                "resolution", f"{root!r} is not a step local", "Assign attributes of objects listed in LOCALS."
            )
        owner = step.step_locals[root]
        if len(attributes) > 1:  # `getattr` may run properties: user code
            owner = await on_user_thread(lambda: _resolve_owner(owner, segments))
    # Validators, properties, `__setattr__` and the `__repr__` of the preview are the user's code too.
    return await _evaluate_awaiting(
        step, "nh_assign", expression, then=lambda value, bindings: _store(step, target_path, owner, value, bindings)
    )


def _resolve_owner(owner: object, segments: list[str]) -> object:
    """The object whose last attribute `nh_assign` sets: `segments[1:-1]` looked up from the root's value."""
    for depth, attribute in enumerate(segments[1:-1], start=1):
        try:
            owner = getattr(owner, attribute)
        except Exception as exc:
            raise ToolBoundaryError(
                "resolution",
                f"cannot resolve {'.'.join(segments[: depth + 1])!r}: {_describe(exc)}",
                "Inspect the object with nh_eval to find its attributes.",
            ) from exc
    return owner


def _store(
    step: StepContext, target_path: str, owner: object, value: object, bindings: dict[str, object]
) -> object:
    """Validate `value`, store it at `target_path` (a step local, or an attribute of `owner`) with the
    expression's `:=` bindings, and report it."""
    root, _, attribute_path = target_path.partition(".")
    if not attribute_path:
        value = step.validate_binding(root, value)
        step.step_locals.update(bindings)
        step.step_locals[root] = value
    else:
        attribute = attribute_path.rpartition(".")[2]
        value = _validate_attribute(owner, attribute, value)
        try:
            setattr(owner, attribute, value)
        except Exception as exc:
            raise ToolBoundaryError(
                "execution", f"cannot set {target_path!r}: {_describe(exc)}", "Check that the attribute is writable."
            ) from exc
        step.step_locals.update(bindings)
    if events.listening():
        events.emit(
            events.Assignment(
                invocation_id=step.invocation_id, target=target_path, value=step.rendering.preview(value, name=root)
            )
        )
    return value


def _validate_attribute(owner: object, attribute: str, value: object) -> object:
    expected = declared_attribute_type(type(owner), attribute)
    if expected is None:
        return value
    try:
        return validate_value(expected, value)
    except ToolValidationError as exc:
        raise ToolBoundaryError(
            "invalid_input", f"cannot set {attribute!r}: {exc}", f"Assign a value of type {type_label(expected)}."
        ) from exc
    except ValidationSetupError as exc:
        raise ToolBoundaryError("internal", str(exc), "Report this; nothing was stored.") from exc


# --- the call boundary ------------------------------------------------------------------------------


def _code_of(tool_name: str, arguments: Mapping[str, object]) -> dict[str, str]:
    """The expression (and target) of a built-in call, whole: a display writes the step out as Python from
    them, where the bounded preview of the arguments may be cut."""
    expression = arguments.get("expression")
    if tool_name not in _MODEL_VALUED or not isinstance(expression, str):
        return {}
    target = arguments.get("target_path")
    return {"expression": expression, **({"target": target} if isinstance(target, str) else {})}


async def invoke_tool(
    step: StepContext, tool_name: str, arguments: Mapping[str, object], call: Callable[[], Any], call_id: str = ""
) -> str:
    """Run one tool call and wrap its result (or failure) in the envelope, emitting the call's events."""
    from ..threads._loop import on_user_thread  # here, not at the top: `import nighthawk` stays free of asyncio

    listening = events.listening()
    call_id = call_id or f"{tool_name}-{time.perf_counter_ns()}"
    if listening:
        events.emit(
            events.ToolCallStarted(
                invocation_id=step.invocation_id,
                call_id=call_id,
                tool_name=tool_name,
                arguments=step.rendering.preview(dict(arguments)),
                **_code_of(tool_name, arguments),
            )
        )
    started = time.perf_counter()
    # Oversight sees the call first; a refused call never runs (a hook's own failure ends the step).
    error: ToolBoundaryError | None = await review_tool_call(step, tool_name, arguments, call_id)
    preview = ""
    awaited = False
    try:
        if error is not None:
            raise error
        value = call()
        if inspect.isawaitable(value):
            value = await value
        awaited = isinstance(value, _Evaluated) and value.awaited
        if isinstance(value, Rendered):  # rendered in an isolated step's child: scrubbed again here
            scrub = current_scrubber().scrub
            envelope, preview, awaited = scrub(value.envelope), scrub(value.preview), value.awaited
        elif type(value) in _PLAIN:
            envelope, preview = _success(step, value)
        elif tool_name in _MODEL_VALUED:  # the model's value: its `__repr__` may be any function it chose
            envelope, preview = await on_user_thread(lambda: guarded(step, tool_name, lambda: _success(step, value)))
        else:  # rendering calls the value's own `__repr__` and friends: user code, so on the user's thread
            envelope, preview = await on_user_thread(lambda: _success(step, value))
    except ToolBoundaryError as exc:
        error = exc
    except StepAbortedError:
        raise
    except Exception as exc:  # a user tool raised: the model gets to see it and adapt
        error = _evaluation_error(tool_name, exc)
    if error is not None:
        step.note_tool_error()
        envelope = _failure(step, error)
    if listening:
        events.emit(
            events.ToolCallFinished(
                invocation_id=step.invocation_id,
                call_id=call_id,
                tool_name=tool_name,
                result=preview,
                error_kind=None if error is None else error.kind,
                error_message=None if error is None else error.message,  # `emit` scrubs every event
                duration_s=time.perf_counter() - started,
                awaited=awaited,
            )
        )
    return envelope
