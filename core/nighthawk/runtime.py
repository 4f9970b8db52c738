"""Dynamic scoping: which executor runs steps, under which run and scope ids, with which extra prompt text.

Everything here lives in context variables, so concurrent tasks and threads each see their own scope.
A notebook kernel runs each cell in a fresh context, so a kernel-wide executor is set with
`set_default_step_executor` instead.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from . import events
from ._tool_registry import ToolScope, push_tool_scope
from .configuration import StepExecutorConfiguration, StepExecutorConfigurationPatch
from .errors import NighthawkError
from .oversight._kinds import Oversight
from .oversight._oversee import overseeing
from .step import ExecutionContext, StepContext

if TYPE_CHECKING:
    # A type only: the outcome models import pydantic, which `import nighthawk` leaves out.
    from ._outcome_kinds import Outcome

__all__ = [
    "ExecutionContext",
    "StepExecutor",
    "get_execution_context",
    "get_step_executor",
    "prompt_suffix_fragments",
    "run",
    "scope",
    "set_default_step_executor",
]


@runtime_checkable
class StepExecutor(Protocol):
    """Anything that can finish a step: read the step, use the tools on it, return an outcome.

    Declared here, where executors are chosen and held; `executor.py` implements it with pydantic-ai.
    """

    async def run_step(self, step: StepContext) -> Outcome:
        """Execute the step and return its (unchecked) outcome; the runner validates and evaluates it."""
        ...


class _Inherit:
    """The default of `scope(oversight=...)`: keep the enclosing scope's hooks (`None` clears them)."""

    def __repr__(self) -> str:
        return "<inherit>"


_INHERIT = _Inherit()


@dataclass(frozen=True)
class _Scope:
    executor: StepExecutor | None
    context: ExecutionContext | None
    system_suffixes: tuple[str, ...] = field(default=())
    user_suffixes: tuple[str, ...] = field(default=())


_current: ContextVar[_Scope] = ContextVar("nighthawk_scope", default=_Scope(None, None))
_default_executor: StepExecutor | None = None
_open_runs = 0
"""`run()` blocks open in any thread: a thread that sees none of them was most likely started inside one."""
_open_runs_lock = threading.Lock()


_telemetry_installed = False


def ensure_telemetry() -> None:
    """Register the OpenTelemetry emitter once; it stays idle until a tracer provider is configured."""
    global _telemetry_installed
    if not _telemetry_installed:
        from .telemetry import install_default_listener  # here: `import nighthawk` stays free of OpenTelemetry

        install_default_listener()
        _telemetry_installed = True


def _new_id() -> str:
    return uuid.uuid4().hex


def set_default_step_executor(executor: StepExecutor | None) -> None:
    """Set the executor used when no `run()`/`scope()` is active (process-wide; `None` clears it)."""
    global _default_executor
    _default_executor = executor


def get_step_executor() -> StepExecutor:
    """Return the step executor in force.

    Raises:
        NighthawkError: No executor is set.
    """
    executor = _current.get().executor or _default_executor
    if executor is None and _open_runs:
        from ._loop import calling_thread_name  # the error path only: asyncio is not imported for it otherwise

        raise NighthawkError(
            f"no step executor is set in thread {calling_thread_name()!r}: `nighthawk.run(...)` is "
            "open in another thread, and a new thread does not inherit it. Start the thread's work in a copy of "
            "the caller's context, for example `pool.submit(contextvars.copy_context().run, function, *args)` "
            "or `threading.Thread(target=contextvars.copy_context().run, args=(function, *args))`, or open "
            "`with nighthawk.run(executor):` inside the thread"
        )
    if executor is None:
        raise NighthawkError(
            "no step executor is set: wrap the call in `with nighthawk.run(executor):` or call "
            "`nighthawk.set_default_step_executor(executor)` (in a notebook: `%nighthawk model provider:model`)"
        )
    return executor


def get_execution_context() -> ExecutionContext:
    """Return the current run and scope ids.

    Raises:
        NighthawkError: Called outside `nighthawk.run(...)`.
    """
    context = _current.get().context
    if context is None:
        raise NighthawkError("no execution context: this is only available inside `with nighthawk.run(...):`")
    return context


def current_execution_context() -> ExecutionContext:
    """The current execution context, or a fresh one-off context when no run is active (steps need ids)."""
    return _current.get().context or ExecutionContext(run_id=_new_id(), scope_id=_new_id())


def prompt_suffix_fragments() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The system and user prompt suffix fragments added by the enclosing scopes."""
    state = _current.get()
    return state.system_suffixes, state.user_suffixes


@contextmanager
def _enter(state: _Scope, *, is_run: bool) -> Iterator[_Scope]:
    assert state.context is not None
    context = state.context
    ensure_telemetry()
    if events.listening():
        starter = events.RunStarted if is_run else events.ScopeStarted
        events.emit(starter(run_id=context.run_id, scope_id=context.scope_id))
    token = _current.set(state)
    error: BaseException | None = None
    try:
        with push_tool_scope(ToolScope()):
            yield state
    except BaseException as exc:
        error = exc
        raise
    finally:
        _current.reset(token)
        if events.listening():
            events.emit(
                events.ScopeFinished(
                    run_id=context.run_id,
                    scope_id=context.scope_id,
                    is_run=is_run,
                    error=None if error is None else type(error).__name__,
                )
            )


@contextmanager
def run(step_executor: StepExecutor, *, run_id: str | None = None) -> Iterator[StepExecutor]:
    """Run with `step_executor` under a new execution context (a new run id unless one is given).

    Args:
        step_executor: The executor for every step started inside the `with` block.
        run_id: Continue a run started elsewhere (for example in a parent process) instead of starting one.
    """
    global _open_runs
    context = ExecutionContext(run_id=run_id or _new_id(), scope_id=_new_id())
    outer = _current.get()
    state = _Scope(step_executor, context, outer.system_suffixes, outer.user_suffixes)
    with _open_runs_lock:
        _open_runs += 1
    try:
        with _enter(state, is_run=True):
            yield step_executor
    finally:
        with _open_runs_lock:
            _open_runs -= 1


@contextmanager
def scope(
    *,
    step_executor_configuration: StepExecutorConfiguration | None = None,
    step_executor_configuration_patch: StepExecutorConfigurationPatch | None = None,
    step_executor: StepExecutor | None = None,
    system_prompt_suffix_fragment: str | None = None,
    user_prompt_suffix_fragment: str | None = None,
    oversight: Oversight | None | _Inherit = _INHERIT,
) -> Iterator[StepExecutor]:
    """Enter a nested scope of the current run, overriding only what is given.

    Args:
        step_executor_configuration: Replace the executor's whole configuration.
        step_executor_configuration_patch: Change some fields of the configuration.
        step_executor: Use another executor (the configuration arguments then apply to it).
        system_prompt_suffix_fragment: Text appended to the system prompt inside the scope.
        user_prompt_suffix_fragment: Text appended to the user prompt inside the scope.
        oversight: Hooks that see every tool call and every commit of the blocks inside the scope
            (`nighthawk.oversight.Oversight`); left out, the enclosing scope's stay in force, and `None`
            clears them.

    Yields:
        The executor in force inside the scope.

    Raises:
        NighthawkError: No executor is set (outside `run()` and with no default).
    """
    outer = _current.get()
    executor = step_executor or get_step_executor()
    if step_executor_configuration is not None or step_executor_configuration_patch is not None:
        configure = getattr(executor, "with_configuration", None)
        if configure is None:
            raise NighthawkError(
                f"executor {executor!r} has no configuration to change; pass `step_executor=` instead"
            )
        configuration = step_executor_configuration or executor.configuration
        if step_executor_configuration_patch is not None:
            configuration = configuration.apply(step_executor_configuration_patch)
        executor = configure(configuration)
    parent = outer.context or current_execution_context()
    state = _Scope(
        executor,
        ExecutionContext(run_id=parent.run_id, scope_id=_new_id()),
        outer.system_suffixes + ((system_prompt_suffix_fragment,) if system_prompt_suffix_fragment else ()),
        outer.user_suffixes + ((user_prompt_suffix_fragment,) if user_prompt_suffix_fragment else ()),
    )
    with overseeing(oversight) if oversight is not _INHERIT else nullcontext(), _enter(state, is_run=False):
        yield executor
