"""The road every Natural block takes: frame -> step -> executor -> outcome -> commit.

Both doors (the decorator and the `%%natural` cell magic) call `run_block` or `run_block_async` with a
`Frame`, and apply the returned `BlockResult` to Python in one motion. Any failure or interrupt raises
before a result exists, so nothing is committed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .. import events
from .._report import shown_short
from ..budget import Deadline, step_deadline
from ..configuration import StepExecutorConfiguration
from ..errors import (
    ExecutionError,
    ModelConfigurationError,
    NaturalParseError,
    NighthawkError,
    StepAbortedError,
    ToolEvaluationError,
    ToolValidationError,
    name_uncommitted,
    record_error,
)
from ..oversight._oversee import isolation_in_force, review_commit, step_machinery
from ..program.block import Program
from ..program.frame import Frame
from ..secrets._scrubber import scrub_exception, scrubbing_step
from ..step._context import StepContext, activate, build_step
from ..step._tool_registry import push_tool_scope, visible_tools
from ..threads._deadline import DeadlinePassed, bounded_by
from .runtime import current_execution_context, ensure_telemetry, get_step_executor, scope_implicit_references

if TYPE_CHECKING:
    # A type only: the outcome models import pydantic, which `import nighthawk` leaves out.
    from ..step._outcome_kinds import Resolution

__all__ = ["BlockResult", "prepared_step", "run_block", "run_block_async"]

_DEFAULT_CONFIGURATION = StepExecutorConfiguration()


@dataclass(frozen=True, kw_only=True)
class BlockResult:
    """What a door applies to Python after a block succeeded."""

    kind: str
    """The outcome kind."""
    values: Mapping[str, object] = field(default_factory=dict)
    """Write bindings to commit (only names present in step locals at the end)."""
    value: object = None
    """The return value for `return`."""
    exception: BaseException | None = None
    """The exception to raise for `raise` (nothing is committed then)."""


def run_block(program: Program, frame: Frame) -> BlockResult:
    """Run a block from synchronous code: the conversation on the background loop (so it works inside a
    running loop), the user's code on this thread, which waits for the step and serves it."""
    from ..threads._loop import run_sync  # asyncio is imported on the first block, not with nighthawk

    # Started by guarded model code (a natural function it calls): the loop's thread and the step's requests
    # are nighthawk's, not the model's; its model code gets the guards back.
    with step_machinery():
        return run_sync(run_block_async(program, frame))


async def run_block_async(program: Program, frame: Frame) -> BlockResult:
    """Run a block and return what to commit, or raise without committing anything."""
    with step_machinery():
        return await _run_block(program, frame)


async def _run_block(program: Program, frame: Frame) -> BlockResult:
    executor = get_step_executor()
    ensure_telemetry()
    step, configuration = _new_step(program, frame, executor)
    # The wall-time budget runs from here: rendering the prompt and every call of user code count.
    deadline = step_deadline(configuration.step_budget)
    with _scrubbing(step) as scrubber, bounded_by(deadline):
        result = await _run_step(program, executor, step, deadline, frame)
        if result.exception is not None:
            scrub_exception(result.exception, scrubber)
        return result


def _new_step(program: Program, frame: Frame, executor: object) -> tuple[StepContext, StepExecutorConfiguration]:
    configuration = getattr(executor, "configuration", None) or _DEFAULT_CONFIGURATION
    step = build_step(
        program,
        frame,
        execution_context=current_execution_context(),
        configuration=configuration,
        tools=visible_tools(),
        implicit_references=scope_implicit_references(),
    )
    return step, configuration


def _scrubbing(step: StepContext) -> Any:
    # Everything the step sends out (model requests, events, logs, the exception it raises) is scrubbed of
    # the secret values in its scope while this is current.
    return scrubbing_step(
        step.rendering.redaction,
        step_locals=step.step_locals,
        step_globals=step.step_globals,
        reads=step.program.reads,
        interpolated=step.program.interpolated,
    )


@contextmanager
def prepared_step(program: Program, frame: Frame) -> Iterator[tuple[StepContext, StepExecutorConfiguration]]:
    """The step `run_block` would run for `program` in `frame`, and its executor's configuration, without
    running it: inside the `with`, what the step renders is scrubbed of its scope's secrets, as when it runs
    (`%nighthawk prompt` shows a step's prompts this way).

    Raises:
        NighthawkError: No executor is set, or the frame leaves the block no outcome.
    """
    step, configuration = _new_step(program, frame, get_step_executor())
    with _scrubbing(step):
        yield step, configuration


async def _run_step(
    program: Program,
    executor: object,
    step: StepContext,
    deadline: Deadline | None,
    frame: Frame,
) -> BlockResult:
    from ..threads._loop import on_user_thread  # asyncio is imported on the first block, not with nighthawk

    listening = events.listening()
    started = time.perf_counter()
    if listening:
        events.emit(
            events.StepStarted(
                step_id=step.step_id,
                invocation_id=step.invocation_id,
                parent_invocation_id=step.parent.invocation_id if step.parent else None,
                run_id=step.execution_context.run_id,
                scope_id=step.execution_context.scope_id,
                program=program.prompt_text,
                model=str(getattr(executor, "model_label", type(executor).__name__)),
                allowed_outcomes=step.allowed_outcomes,
                placeholder=step.rendering.redaction.placeholder,
                local_sources=_local_sources(frame),
                isolated=isolation_in_force() is not None,
            )
        )
    try:
        async with _wall_clock(deadline):
            # Previews call the values' `__repr__`: user code, so on the user's thread like every other.
            before = await on_user_thread(lambda: _snapshot(step)) if listening else None
            with activate(step), push_tool_scope(step.tool_scope):
                async with _isolating(step):
                    resolution = await _execute(executor, step, listening)
            result = _result(step, resolution)
            result = replace(result, values=await review_commit(step, resolution, result.values))
            if listening:
                success = await on_user_thread(lambda: _guarded_success_events(step, resolution, result, before, started))
    except BaseException as exc:
        name_uncommitted(exc, step.program.writes)
        if isinstance(exc, Exception):  # not an interrupt or a cancellation
            record_error(shown_short(exc))
        if listening:
            _emit_failure(step, exc, started)
        raise
    if listening:
        for event in success:
            events.emit(event)
    return result


def _local_sources(frame: Frame) -> tuple[events.LocalSource, ...]:
    """Where a function's locals can be taken from in the notebook, for its step's code (a cell's locals are
    the notebook's own). Only builtin values are turned into text: no user code runs, on any thread."""
    if frame.module_namespace:
        return ()
    from ..transcript._local_sources import local_sources  # with the first function's step, as the events are

    return local_sources(frame.python_locals, frame.parameters)


def _isolating(step: StepContext) -> AbstractAsyncContextManager[None]:
    """Under `isolated()`: the step's model code runs in a walled child, forked here and ended with the step."""
    isolation = isolation_in_force()
    if isolation is None:
        return nullcontext()
    # Here: the fork and the walls load with the first isolated step. The child runs the model's code with
    # the tools' and the outcome's own functions, handed to it (the isolation does not import them).
    from ..answers.outcome import resolve_outcome
    from ..answers.tools import assign_value, eval_expression, rendered_result
    from ..oversight.isolation._parent import isolating
    from ..oversight.isolation._sessions import StepCode

    code = StepCode(evaluate=eval_expression, assign=assign_value, render=rendered_result, resolve=resolve_outcome)
    return isolating(step, isolation, code)


@asynccontextmanager
async def _wall_clock(deadline: Deadline | None) -> AsyncIterator[None]:
    """End the step at `deadline` with `BudgetExceededError`: the conversation by a timeout on its loop, the
    user code it runs by an interrupt (`threads._deadline`)."""
    if deadline is None:
        yield
        return
    import asyncio

    try:
        async with asyncio.timeout(deadline.at - time.monotonic()) as clock:
            yield
    except TimeoutError:
        if not clock.expired():
            raise  # not ours: a request that timed out, say
        raise deadline.exceeded() from None
    except DeadlinePassed as exc:
        raise deadline.exceeded() from exc  # the cause shows where the user code was stopped


async def _execute(executor: object, step: StepContext, listening: bool) -> Resolution:
    if listening:
        events.emit(events.ExecutorStarted(invocation_id=step.invocation_id, executor=type(executor).__name__))
    try:
        outcome = await executor.run_step(step)  # type: ignore[attr-defined]
    except BaseException as exc:
        if listening:
            events.emit(events.ExecutorFinished(invocation_id=step.invocation_id, error=type(exc).__name__))
        raise
    if listening:
        events.emit(events.ExecutorFinished(invocation_id=step.invocation_id, error=None))
    from ..answers.outcome import resolve_outcome  # here: it imports pydantic, which `import nighthawk` leaves out

    if step.resolution is not None and step.resolution.outcome is outcome:
        # The executor already checked and evaluated it (with retries): evaluating the return expression
        # again would run the user's code twice, and twice more at every level of nesting.
        return step.resolution
    return await resolve_outcome(outcome, step)


def _result(step: StepContext, resolution: Resolution) -> BlockResult:
    if resolution.exception is not None:
        # A `raise` outcome is a failure of the block too: `last_error()` must not show an older one.
        record_error(shown_short(resolution.exception))
        return BlockResult(kind=resolution.kind, exception=resolution.exception)
    return BlockResult(kind=resolution.kind, values=step.committable(), value=resolution.value)


# --- events -----------------------------------------------------------------------------------------

def _snapshot(step: StepContext) -> dict[str, tuple[int, str]]:
    """Identity and bounded preview of the step locals a display may diff (first N names only)."""
    limit = step.rendering.limits.locals_max_items
    names = [name for name in step.step_locals if not name.startswith("_")][:limit]
    return {name: (id(step.step_locals[name]), step.rendering.preview(step.step_locals[name], name=name)) for name in names}


def _changes(step: StepContext, before: dict[str, tuple[int, str]], committed: Mapping[str, object]) -> tuple[events.LocalsChange, ...]:
    after = _snapshot(step)
    changes: list[events.LocalsChange] = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        change = "added" if old is None else "removed" if new is None else "changed"
        changes.append(
            events.LocalsChange(
                name=name,
                change=change,
                before=None if old is None else old[1],
                after=None if new is None else new[1],
                committed=name in committed,
                # Same object, new preview: the step mutated a value it shares with Python.
                in_place=old is not None and new is not None and old[0] == new[0],
            )
        )
    return tuple(changes)


def _guarded_success_events(
    step: StepContext, resolution: Resolution, result: BlockResult, before: dict[str, tuple[int, str]] | None, started: float
) -> list[events.Event]:
    """`_success_events` under the step's runtime guards: the previews render the values the model's code
    made, whose methods it may have set to any function of Python's (`functools.partial(os.remove, p)`)."""
    from ..answers.tools import guarded  # the oversight hooks load with the first step, not at import
    from ..step._outcome_schema import OUTCOME_TOOL

    return guarded(step, OUTCOME_TOOL, lambda: _success_events(step, resolution, result, before, started))


def _success_events(
    step: StepContext, resolution: Resolution, result: BlockResult, before: dict[str, tuple[int, str]] | None, started: float
) -> list[events.Event]:
    """The events of a step that succeeded, made before any is sent: their previews run user code, which the
    deadline may still stop."""
    outcome = resolution.outcome
    made: list[events.Event] = [
        events.OutcomeReached(
            invocation_id=step.invocation_id,
            kind=outcome.kind,
            return_expression=getattr(outcome, "return_expression", None),
            return_value=step.rendering.preview(resolution.value) if outcome.kind == "return" else None,
            return_awaited=resolution.awaited,
            raise_message=getattr(outcome, "raise_message", None),
            raise_error_type=getattr(outcome, "raise_error_type", None),
        ),
        *_usage_event(step),
    ]
    if outcome.kind != "raise":
        made.append(
            events.Committed(
                invocation_id=step.invocation_id,
                names=tuple(result.values),
                changes=_changes(step, before or {}, result.values),
                unset=step.unset_writes(),
            )
        )
    made.append(
        events.StepFinished(
            invocation_id=step.invocation_id,
            status="raised" if outcome.kind == "raise" else "completed",
            duration_s=time.perf_counter() - started,
        )
    )
    return made


def _usage_event(step: StepContext) -> tuple[events.UsageReported, ...]:
    usage = step.usage
    if usage is None:
        return ()
    return (
        events.UsageReported(
            invocation_id=step.invocation_id,
            model=usage.model,
            requests=usage.requests,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
            cache_read_tokens=usage.cache_read_tokens,
            failed_requests=usage.failed_requests,
        ),
    )


def _error_kind(exc: BaseException) -> str:
    import asyncio

    match exc:
        case KeyboardInterrupt() | asyncio.CancelledError():
            return "interrupted"
        case NaturalParseError():
            return "parse"
        case StepAbortedError():
            return "python"  # user code ended the step
        case ExecutionError():
            return "execution"
        case ToolEvaluationError() | ToolValidationError():
            return "tool"
        case ModelConfigurationError():
            return "configuration"  # a missing key or an unknown provider: the setup's fault, not the runtime's
        case NighthawkError():
            return "internal"
        case _:
            return "python"


def _emit_failure(step: StepContext, exc: BaseException, started: float) -> None:
    kind = _error_kind(exc)
    for event in _usage_event(step):
        events.emit(event)
    events.emit(
        events.StepFailed(
            invocation_id=step.invocation_id,
            error_type=type(exc).__name__,
            error_kind=kind,
            error_message=str(exc)[:2000],  # `emit` scrubs every event
            interrupted=kind == "interrupted",
        )
    )
    events.emit(
        events.StepFinished(
            invocation_id=step.invocation_id,
            status="interrupted" if kind == "interrupted" else "failed",
            duration_s=time.perf_counter() - started,
        )
    )
