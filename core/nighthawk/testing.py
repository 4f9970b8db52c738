"""Helpers for testing programs that use Natural blocks, with no model, network or key.

Two offline executors stand in for the model:

* `ScriptedExecutor` answers each block execution with the next `StepResponse` of a list (or of a list per
  block);
* `CallbackExecutor` asks a function of the block's program text and step locals.

Both act on the step through the same tool implementations a model uses (`nh_eval`, `nh_assign`), so
type validation, events and the all-or-nothing commit behave exactly as with a model. To test the prompts
and the agent loop themselves, `agent_executor(function_model(...))` runs a scripted pydantic-ai model
through the real `AgentStepExecutor`.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

from .answers.outcome import BreakOutcome, ContinueOutcome, Outcome, PassOutcome, RaiseOutcome, ReturnOutcome, parse_outcome
from .answers.tools import assign_value, eval_expression, invoke_tool
from .configuration import StepExecutorConfiguration
from .errors import ExecutionError
from .model.executor import AgentStepExecutor
from .step import _outcome_schema
from .step._context import StepContext

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import Model
    from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = [
    "CallbackExecutor",
    "Expression",
    "ResponseLike",
    "ScriptedCall",
    "ScriptedExecutor",
    "StepResponse",
    "agent_executor",
    "break_outcome",
    "continue_outcome",
    "function_model",
    "pass_outcome",
    "raise_outcome",
    "return_outcome",
]

# A step local that carries a scripted Python value into `nh_assign` for the length of one call. Names
# starting with `__nh` are never shown in prompts, and `_` names are left out of the locals diff.
_SCRIPTED_VALUE = "__nh_scripted_value"


# --- outcomes ----------------------------------------------------------------------------------------


def pass_outcome() -> PassOutcome:
    """The block is done; execution continues after it."""
    return PassOutcome(kind="pass")


def return_outcome(expression: str) -> ReturnOutcome:
    """Return the value of `expression` (evaluated against the step's variables) from the function."""
    return ReturnOutcome(kind="return", return_expression=expression)


def break_outcome() -> BreakOutcome:
    """Break out of the loop around the block."""
    return BreakOutcome(kind="break")


def continue_outcome() -> ContinueOutcome:
    """Continue with the next iteration of the loop around the block."""
    return ContinueOutcome(kind="continue")


def raise_outcome(message: str, error_type: str | type[BaseException] | None = None) -> RaiseOutcome:
    """Raise an exception in the program: `error_type(message)`, or an `ExecutionError` when it is `None`.

    Args:
        message: The exception message.
        error_type: An exception class, or its name; it must be one the step offers (builtins such as
            `ValueError`, or an exception class in the block's scope).
    """
    name = error_type.__name__ if isinstance(error_type, type) else error_type
    return RaiseOutcome(kind="raise", raise_message=message, raise_error_type=name)


# --- responses ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expression:
    """A Python expression to assign instead of a value: `StepResponse(assign={"y": Expression("x * 2")})`."""

    text: str
    """Evaluated against the step's variables, as `nh_assign` would."""


@dataclass(frozen=True, kw_only=True)
class StepResponse:
    """What an offline executor does in one block execution: evaluate, assign, then end with an outcome."""

    evaluate: Sequence[str] = ()
    """Expressions run first, in order, through `nh_eval`, for their side effects (`items.append(3)`)."""
    assign: Mapping[str, object] = field(default_factory=dict)
    """Values to store by target (`name` or `name.attr`), through `nh_assign`: validated against the write
    binding's type and reported as events, and committed only when the block ends well. A value wrapped
    in `Expression` is evaluated against the step's variables instead."""
    outcome: Outcome | Mapping[str, object] | str = field(default_factory=pass_outcome)
    """How the block ends: an outcome (see the factories), or its JSON as a mapping or a string."""

    def __post_init__(self) -> None:
        if isinstance(self.evaluate, str):
            raise TypeError(f"`evaluate` takes a list of expressions, got the string {self.evaluate!r}")
        object.__setattr__(self, "evaluate", tuple(self.evaluate))
        object.__setattr__(self, "assign", MappingProxyType(dict(self.assign)))


ResponseLike: TypeAlias = StepResponse | Outcome | Mapping[str, object] | None
"""A `StepResponse`; an outcome alone; a mapping with the keys of `StepResponse`; or `None` for a bare pass."""

_RESPONSE_KEYS = ("evaluate", "assign", "outcome")


def _as_response(response: object) -> StepResponse:
    match response:
        case StepResponse():
            return response
        case None:
            return StepResponse()
        case PassOutcome() | ReturnOutcome() | BreakOutcome() | ContinueOutcome() | RaiseOutcome():
            return StepResponse(outcome=response)
        case Mapping():
            unknown = sorted(set(response) - set(_RESPONSE_KEYS))
            if unknown:
                raise TypeError(
                    f"a scripted response has unknown keys {unknown!r}; use {', '.join(_RESPONSE_KEYS)} "
                    "(binding values go under `assign`)"
                )
            return StepResponse(**response)  # type: ignore[arg-type]
        case _:
            raise TypeError(
                f"a scripted response must be a StepResponse, an outcome, a mapping or None, got {response!r}"
            )


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One block execution an offline executor answered, kept for assertions."""

    step_id: str
    """`module:line` of the block."""
    invocation_id: str
    program: str
    """The block's program text as the executor received it (`step.program.text`), final newline included."""
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    allowed_outcomes: tuple[str, ...]


def _record(step: StepContext) -> ScriptedCall:
    return ScriptedCall(
        step_id=step.step_id,
        invocation_id=step.invocation_id,
        program=step.program.text,
        reads=step.program.reads,
        writes=step.program.writes,
        allowed_outcomes=step.allowed_outcomes,
    )


async def _apply(step: StepContext, response: StepResponse) -> Outcome:
    """Carry out `response` on `step` through the model's tools; fail the block on the first failed call."""
    step.model_round = 1
    for index, expression in enumerate(response.evaluate):
        await _call(step, "nh_eval", {"expression": expression}, lambda e=expression: eval_expression(step, e), index)
    for index, (target, value) in enumerate(response.assign.items(), start=len(response.evaluate)):
        if isinstance(value, Expression):
            arguments: dict[str, object] = {"target_path": target, "expression": value.text}
            call = lambda t=target, e=value.text: assign_value(step, t, e)  # noqa: E731
        else:
            root = target.split(".", 1)[0]
            arguments = {"target_path": target, "value": step.rendering.redaction.mask_value(root, value)}
            call = lambda t=target, v=value: _assign_python_value(step, t, v)  # noqa: E731
        await _call(step, "nh_assign", arguments, call, index)
    return parse_outcome(response.outcome, step)


async def _call(step: StepContext, tool: str, arguments: dict[str, object], call: Callable[[], Any], index: int) -> None:
    envelope = await invoke_tool(step, tool, arguments, call, f"scripted-{index + 1}")
    if step.tool_error_round == step.model_round:
        error = json.loads(envelope)["error"]
        shown = arguments.get("expression", arguments.get("value"))
        raise ExecutionError(
            f"scripted {tool} call for block {step.step_id!r} failed ({error['kind']}): {error['message']}; "
            f"the call was {tool}({arguments.get('target_path', shown)!r}"
            + (f", {shown!r})" if "target_path" in arguments else ")")
        )


async def _assign_python_value(step: StepContext, target: str, value: object) -> object:
    # Bind the value under a hidden name and assign that name, so the scripted value takes exactly the
    # path of a model's assignment: same validation, same events, same atomicity.
    step.step_locals[_SCRIPTED_VALUE] = value
    try:
        return await assign_value(step, target, _SCRIPTED_VALUE)
    finally:
        step.step_locals.pop(_SCRIPTED_VALUE, None)


# --- executors ---------------------------------------------------------------------------------------


class ScriptedExecutor:
    """A step executor that answers block executions from a script, in order.

    Args:
        responses: One response per block execution, used in order; or a mapping from step id
            (`module:line`, as in `calls`) to the responses of that block.

    Running out of responses fails the block with an `AssertionError` (a broken test, not a program error
    the code under test should handle) naming the block and how many responses were scripted.
    """

    model_label = "scripted"

    def __init__(self, responses: Sequence[ResponseLike] | Mapping[str, Sequence[ResponseLike]]) -> None:
        self._keyed = isinstance(responses, Mapping)
        if isinstance(responses, Mapping):
            self._queues = {step_id: deque(map(_as_response, items)) for step_id, items in responses.items()}
        else:
            self._queues = {None: deque(map(_as_response, responses))}
        self._scripted = {key: len(queue) for key, queue in self._queues.items()}
        self._lock = threading.Lock()
        self.calls: list[ScriptedCall] = []
        """Every block execution answered (or attempted), in order."""

    def __repr__(self) -> str:
        return f"ScriptedExecutor(remaining={self.remaining})"

    @property
    def remaining(self) -> int:
        """Responses not used yet (a test can assert it is 0)."""
        return sum(len(queue) for queue in self._queues.values())

    def _next(self, step: StepContext) -> StepResponse:
        key = step.step_id if self._keyed else None
        with self._lock:
            self.calls.append(_record(step))
            queue = self._queues.get(key)
            if queue is None:
                raise AssertionError(
                    f"ScriptedExecutor has no responses for block {step.step_id!r}; scripted blocks: "
                    f"{sorted(self._queues)!r}"
                )
            if not queue:
                where = "for this block" if self._keyed else "in all"
                raise AssertionError(
                    f"ScriptedExecutor ran out of responses at block {step.step_id!r}: "
                    f"{self._scripted[key]} were scripted {where} and all have been used. Script one more "
                    "response, or check why the block ran more often than expected."
                )
            return queue.popleft()

    async def run_step(self, step: StepContext) -> Outcome:
        """Apply the next scripted response to `step` and return its outcome."""
        return await _apply(step, self._next(step))


class CallbackExecutor:
    """A step executor that asks a function what each block execution does.

    Args:
        callback: `callback(program_text, step_locals)`, sync or async, returning a response (see
            `ResponseLike`). `step_locals` is a read-only view; change values through the response so they
            are validated and committed like a model's. An exception raised by the callback fails the block.
    """

    model_label = "callback"

    def __init__(self, callback: Callable[[str, Mapping[str, object]], ResponseLike | Awaitable[ResponseLike]]) -> None:
        self.callback = callback
        self.calls: list[ScriptedCall] = []
        """Every block execution answered (or attempted), in order."""

    def __repr__(self) -> str:
        return f"CallbackExecutor({getattr(self.callback, '__qualname__', self.callback)!r})"

    async def run_step(self, step: StepContext) -> Outcome:
        """Ask the callback for a response and apply it to `step`."""
        self.calls.append(_record(step))
        result = self.callback(step.program.text, MappingProxyType(step.step_locals))
        if inspect.isawaitable(result):
            result = await result
        return await _apply(step, _as_response(result))


# --- the real agent with a scripted model ------------------------------------------------------------


def agent_executor(
    model: Model | Callable[[list[ModelMessage], AgentInfo], Any],
    *,
    configuration: StepExecutorConfiguration | None = None,
) -> AgentStepExecutor:
    """The real `AgentStepExecutor` on a test model: prompts, tools, retries and outcome checks included.

    Args:
        model: A pydantic-ai model (`FunctionModel`, `TestModel`, `function_model(...)`), or a function
            `(messages, info) -> ModelResponse` to wrap in a `FunctionModel`.
        configuration: Other settings; its `model` is replaced.
    """
    from dataclasses import replace

    from pydantic_ai.models import Model
    from pydantic_ai.models.function import FunctionModel

    if not isinstance(model, Model):
        model = FunctionModel(model)
    configuration = replace(configuration or StepExecutorConfiguration(), model=model)
    return AgentStepExecutor.from_configuration(configuration=configuration)


def function_model(*rounds: object) -> FunctionModel:
    """A `FunctionModel` that answers the model requests it receives with `rounds`, in order.

    Each round is a pydantic-ai `ModelResponse`, an outcome (sent as a call of the outcome tool `nh_outcome`), a
    `(tool_name, arguments)` pair, or a list of outcomes and pairs sent together in one response. Asking
    for more rounds than scripted raises an `AssertionError`.

    Example: `function_model([("nh_assign", {"target_path": "y", "expression": "x * 2"})], return_outcome("y"))`.
    """
    from pydantic_ai.models.function import FunctionModel

    responses = deque(_model_response(round_) for round_ in rounds)
    total = len(responses)
    lock = threading.Lock()

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        with lock:
            if not responses:
                raise AssertionError(f"function_model was asked for round {total + 1}, but only {total} were scripted")
            return responses.popleft()

    return FunctionModel(answer, model_name="scripted")


def _model_response(round_: object) -> ModelResponse:
    from pydantic_ai.messages import ModelResponse

    if isinstance(round_, ModelResponse):
        return round_
    items = round_ if isinstance(round_, list) else [round_]
    return ModelResponse(parts=[_tool_call(item) for item in items])


def _tool_call(item: object) -> Any:
    from pydantic_ai.messages import ToolCallPart

    match item:
        case ToolCallPart():
            return item
        case PassOutcome() | ReturnOutcome() | BreakOutcome() | ContinueOutcome() | RaiseOutcome():
            return ToolCallPart(_outcome_schema.OUTCOME_TOOL, {_outcome_schema.OUTCOME_KEY: item.model_dump(exclude_none=True)})
        case (str() as name, Mapping() as arguments):
            return ToolCallPart(name, dict(arguments))
        case _:
            raise TypeError(
                f"a function_model round item must be an outcome, a (tool_name, arguments) pair or a ToolCallPart, "
                f"got {item!r}"
            )

