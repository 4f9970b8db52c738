"""Dynamic scoping: which executor runs steps, under which run and scope ids, with which extra prompt text.

Everything here lives in context variables, so concurrent tasks and threads each see their own scope.
A notebook kernel runs each cell in a fresh context, so a kernel-wide executor is set with
`set_default_step_executor` instead.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from .. import _listeners
from ..budget import BudgetScope, StepUsage, UsageBudget, UsageTotals, active_budgets, budget_lock, replacing_budgets
from ..configuration import StepExecutorConfiguration, StepExecutorConfigurationPatch
from ..errors import NighthawkError
from ..step._context import ExecutionContext, StepContext, current_step
from .._first_use import prepare_pending

if TYPE_CHECKING:
    # A type only: the outcome models import pydantic, which `import nighthawk` leaves out.
    from ..oversight._kinds import Oversight
    from ..step._outcome_kinds import Outcome

__all__ = [
    "ExecutionContext",
    "ExecutionRef",
    "ScopeMode",
    "StepExecutor",
    "UsageMeter",
    "get_current_usage_meter",
    "get_execution_context",
    "get_execution_ref",
    "get_implicit_references",
    "get_step_executor",
    "get_system_prompt_suffix_fragments",
    "get_user_prompt_suffix_fragments",
    "prompt_suffix_fragments",
    "run",
    "scope",
    "scope_implicit_references",
    "set_default_step_executor",
]

ScopeMode = Literal["inherit", "replace"]


@runtime_checkable
class StepExecutor(Protocol):
    """Anything that can finish a step: read the step, use the tools on it, return an outcome.

    Declared here, where executors are chosen and held; `model/executor.py` implements it with pydantic-ai.
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
    references: Mapping[str, object] = field(default_factory=dict)
    """Implicit references: names the model may use in its expressions, listed in the prompt like globals
    (never changed in place: a scope that adds some builds a new mapping)."""


@dataclass(frozen=True, kw_only=True)
class ExecutionRef:
    """Where the caller is: the run, the scope and, inside a Natural block, the step (`None` outside one)."""

    run_id: str
    scope_id: str
    step_id: str | None = None
    """`module:line` of the block being executed, as on its telemetry span."""


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
        from ..telemetry import install_default_listener  # here: `import nighthawk` stays free of OpenTelemetry

        install_default_listener()
        _telemetry_installed = True


class _Counted(Protocol):
    """Token figures of a usage report: pydantic-ai's `RunUsage`, or a `StepUsage`."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...


class UsageMeter:
    """Token and request totals of a run (or of a scope given its own meter), readable at any moment.

    The meter is an unbounded budget group: the steps inside its `with` block report to it exactly what they
    report to every `nighthawk.budget` group, under the same lock, so the two never disagree. Only the
    innermost meter counts a step (an inner run's steps are not also counted by the outer run's meter).
    """

    def __init__(self) -> None:
        self._group = _MeterGroup(limit=UsageBudget(), meter=self)

    def record(self, usage: _Counted) -> None:
        """Add usage by hand (pydantic-ai's `RunUsage`, a `StepUsage`, anything with token counts); a call
        measured by `nighthawk.resilience.budget` in this context counts it too. Its cost is `cost_usd`
        (a `StepUsage`) or `cost` (a `RunUsage`); without one it counts as unpriced, never as $0."""
        cost = getattr(usage, "cost_usd", None)
        if cost is None:
            cost = getattr(usage, "cost", None)
        spent = StepUsage(
            model="",
            requests=getattr(usage, "requests", 0) or 0,
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cost_usd=None if cost is None else float(cost),
            cache_read_tokens=getattr(usage, "cache_read_tokens", 0) or 0,
        )
        measured = [group for group in active_budgets() if group.counts_records and group is not self._group]
        with budget_lock():
            for group in (self._group, *measured):
                group.spent.add(spent)

    def totals(self) -> UsageTotals:
        """A copy of the totals as they stand."""
        with budget_lock():
            return UsageTotals(**vars(self._group.spent))

    @property
    def input_tokens(self) -> int:
        return self.totals().input_tokens

    @property
    def output_tokens(self) -> int:
        return self.totals().output_tokens

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens so far."""
        return self.totals().total_tokens

    @property
    def requests(self) -> int:
        return self.totals().requests

    @property
    def cost_usd(self) -> float | None:
        """Dollars so far, or `None` when some request had no price or none was counted (`totals()`
        has `priced_cost_usd`, the cost of the priced ones)."""
        return self.totals().cost_usd

    def snapshot(self) -> object:
        """An independent pydantic-ai `RunUsage` with the totals now (later steps do not change it)."""
        from pydantic_ai.usage import RunUsage  # pydantic-ai, kept out of `import nighthawk`

        from decimal import Decimal

        totals = self.totals()
        return RunUsage(
            requests=totals.requests,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            cache_read_tokens=totals.cache_read_tokens,
            cost=None if totals.cost_usd is None else Decimal(str(totals.cost_usd)),
        )

    def __repr__(self) -> str:
        totals = self.totals()
        return f"UsageMeter(requests={totals.requests}, total_tokens={totals.total_tokens})"


@dataclass(kw_only=True, eq=False)
class _MeterGroup(BudgetScope):
    """The budget group a `UsageMeter` counts in: unbounded, and it knows its meter."""

    meter: UsageMeter


@contextmanager
def metering(meter: UsageMeter) -> Iterator[UsageMeter]:
    """Count the steps inside the `with` block in `meter` (instead of in the meter of an enclosing run)."""
    with replacing_budgets(lambda group: isinstance(group, _MeterGroup), meter._group):
        yield meter


def current_usage_meter() -> UsageMeter | None:
    """The meter in force, or `None` outside `nighthawk.run(...)`."""
    for group in reversed(active_budgets()):
        if isinstance(group, _MeterGroup):
            return group.meter
    return None


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
    prepare_pending()  # a front end that waited for this first use installs its executor now
    executor = _current.get().executor or _default_executor
    if executor is None and _open_runs:
        from ..threads._loop import calling_thread_name  # the error path only: asyncio is not imported for it otherwise

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


def get_execution_ref() -> ExecutionRef:
    """Return the current run, scope and step ids (the step's only inside a Natural block).

    Raises:
        NighthawkError: Called outside `nighthawk.run(...)` and `nighthawk.scope(...)`.
    """
    context = get_execution_context()
    step = current_step()
    return ExecutionRef(run_id=context.run_id, scope_id=context.scope_id, step_id=None if step is None else step.step_id)


def get_current_usage_meter() -> UsageMeter | None:
    """The usage meter of the current run (or of the scope given its own), `None` outside `nighthawk.run(...)`."""
    return current_usage_meter()


def _active_scope(getter: str) -> _Scope:
    state = _current.get()
    if state.context is None:
        raise NighthawkError(f"`{getter}()` is only available inside `with nighthawk.run(...):` or `nighthawk.scope(...)`")
    return state


def get_implicit_references() -> dict[str, object]:
    """A copy of the implicit references in force (names the model may use like globals).

    Raises:
        NighthawkError: Called outside `nighthawk.run(...)` and `nighthawk.scope(...)`.
    """
    return dict(_active_scope("get_implicit_references").references)


def get_system_prompt_suffix_fragments() -> tuple[str, ...]:
    """The system prompt fragments the enclosing scopes add (the configuration's own are not included).

    Raises:
        NighthawkError: Called outside `nighthawk.run(...)` and `nighthawk.scope(...)`.
    """
    return _active_scope("get_system_prompt_suffix_fragments").system_suffixes


def get_user_prompt_suffix_fragments() -> tuple[str, ...]:
    """The user prompt fragments the enclosing scopes add (the configuration's own are not included).

    Raises:
        NighthawkError: Called outside `nighthawk.run(...)` and `nighthawk.scope(...)`.
    """
    return _active_scope("get_user_prompt_suffix_fragments").user_suffixes


def scope_implicit_references() -> Mapping[str, object]:
    """The implicit references in force, empty when no scope sets any (for building a step)."""
    return _current.get().references


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
    prepare_pending()  # a front end that waited for this first use starts listening now
    ensure_telemetry()
    if _listeners.listening():
        from .. import events  # here, not at the top: `import nighthawk` does not make the event classes (~11 ms)

        starter = events.RunStarted if is_run else events.ScopeStarted
        events.emit(starter(run_id=context.run_id, scope_id=context.scope_id))
    token = _current.set(state)
    error: BaseException | None = None
    # Here, not at the top: the tool registry (inspect) waits for the first run or scope.
    from ..step._tool_registry import ToolScope, push_tool_scope

    try:
        with push_tool_scope(ToolScope()):
            yield state
    except BaseException as exc:
        error = exc
        raise
    finally:
        _current.reset(token)
        if _listeners.listening():
            from .. import events  # (see above)

            events.emit(
                events.ScopeFinished(
                    run_id=context.run_id,
                    scope_id=context.scope_id,
                    is_run=is_run,
                    error=None if error is None else type(error).__name__,
                )
            )


@contextmanager
def run(
    step_executor: StepExecutor, *, run_id: str | None = None, usage_meter: UsageMeter | None = None
) -> Iterator[StepExecutor]:
    """Run with `step_executor` under a new execution context (a new run id unless one is given).

    Args:
        step_executor: The executor for every step started inside the `with` block.
        run_id: Continue a run started elsewhere (for example in a parent process) instead of starting one.
        usage_meter: Count the run's usage in this meter instead of a new one.
    """
    global _open_runs
    context = ExecutionContext(run_id=run_id or _new_id(), scope_id=_new_id())
    outer = _current.get()
    state = _Scope(step_executor, context, outer.system_suffixes, outer.user_suffixes, outer.references)
    with _open_runs_lock:
        _open_runs += 1
    try:
        with metering(usage_meter or UsageMeter()), _enter(state, is_run=True):
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
    mode: ScopeMode = "inherit",
    system_prompt_suffix_fragments: Sequence[str] | None = None,
    user_prompt_suffix_fragments: Sequence[str] | None = None,
    implicit_references: Mapping[str, object] | None = None,
    usage_meter: UsageMeter | None = None,
) -> Iterator[StepExecutor]:
    """Enter a nested scope of the current run, overriding only what is given.

    With `mode="inherit"` (the default) the scope's fragments are appended to the enclosing ones and its
    implicit references are added to theirs; with `mode="replace"` each of the three that is given replaces
    the enclosing value (an empty list or mapping clears it) and each left at `None` is kept.

    Args:
        step_executor_configuration: Replace the executor's whole configuration.
        step_executor_configuration_patch: Change some fields of the configuration.
        step_executor: Use another executor (the configuration arguments then apply to it).
        system_prompt_suffix_fragment: Text appended to the system prompt inside the scope.
        user_prompt_suffix_fragment: Text appended to the user prompt inside the scope.
        oversight: Hooks that see every tool call and every commit of the blocks inside the scope
            (`nighthawk.oversight.Oversight`); left out, the enclosing scope's stay in force, and `None`
            clears them.
        mode: `"inherit"` or `"replace"`, how the scope's fragments and implicit references combine with the
            enclosing scope's.
        system_prompt_suffix_fragments: Texts appended to the system prompt inside the scope (after
            `system_prompt_suffix_fragment`, if both are given).
        user_prompt_suffix_fragments: Texts appended to the user prompt inside the scope.
        implicit_references: Names the model may use in its expressions inside the scope, such as helper
            functions; the prompt lists them like the globals a block mentions.
        usage_meter: Count the usage of the steps inside the scope in this meter (not in the run's).

    Yields:
        The executor in force inside the scope.

    Raises:
        NighthawkError: No executor is set (outside `run()` and with no default), or in `inherit` mode an
            implicit reference names a different value than the enclosing scope's for the same name.
        ValueError: An unknown `mode`, or a lone string given for a list of fragments.
    """
    outer = _current.get()
    system = _fragments("system_prompt_suffix_fragments", system_prompt_suffix_fragments, system_prompt_suffix_fragment)
    user = _fragments("user_prompt_suffix_fragments", user_prompt_suffix_fragments, user_prompt_suffix_fragment)
    system_suffixes, user_suffixes, references = _combined(outer, mode, system, user, implicit_references)
    executor = _scope_executor(step_executor, step_executor_configuration, step_executor_configuration_patch)
    parent = outer.context or current_execution_context()
    state = _Scope(
        executor,
        ExecutionContext(run_id=parent.run_id, scope_id=_new_id()),
        system_suffixes,
        user_suffixes,
        references,
    )
    if oversight is not _INHERIT:
        # Here, not at the top: oversight (its hooks, guards and policies, with ast) loads with its first use.
        from ..oversight._oversee import overseeing
    with (
        overseeing(oversight) if oversight is not _INHERIT else nullcontext(),
        metering(usage_meter) if usage_meter is not None else nullcontext(),
        _enter(state, is_run=False),
    ):
        yield executor


def _combined(
    outer: _Scope, mode: ScopeMode, system: tuple[str, ...] | None, user: tuple[str, ...] | None,
    implicit_references: Mapping[str, object] | None,
) -> tuple[tuple[str, ...], tuple[str, ...], Mapping[str, object]]:
    """A scope's system and user prompt fragments and its implicit references, combined with `outer`'s as `mode` says."""
    if mode == "inherit":
        system_suffixes = outer.system_suffixes + (system or ())
        user_suffixes = outer.user_suffixes + (user or ())
        references = _merged(outer.references, implicit_references or {})
    elif mode == "replace":
        system_suffixes = outer.system_suffixes if system is None else system
        user_suffixes = outer.user_suffixes if user is None else user
        references = outer.references if implicit_references is None else _checked(implicit_references)
    else:
        raise ValueError(f"`mode` must be 'inherit' or 'replace', got {mode!r}")
    return system_suffixes, user_suffixes, references


def _scope_executor(
    step_executor: StepExecutor | None, configuration: StepExecutorConfiguration | None,
    patch: StepExecutorConfigurationPatch | None,
) -> StepExecutor:
    """The executor in force in a scope: the one given or the current one, with its configuration replaced or patched."""
    executor = step_executor or get_step_executor()
    if configuration is not None or patch is not None:
        configure = getattr(executor, "with_configuration", None)
        if configure is None:
            raise NighthawkError(
                f"executor {executor!r} has no configuration to change; pass `step_executor=` instead"
            )
        configuration = configuration or executor.configuration
        if patch is not None:
            configuration = configuration.apply(patch)
        executor = configure(configuration)
    return executor


def _fragments(parameter: str, fragments: Sequence[str] | None, single: str | None) -> tuple[str, ...] | None:
    """The scope's fragments of one prompt (`None` when neither spelling is given), checked."""
    if isinstance(fragments, str):
        raise ValueError(f"`{parameter}` must be a list of strings, got the lone string {fragments!r}")
    if fragments is None and not single:
        return None
    combined = ((single,) if single else ()) + tuple(fragments or ())
    for fragment in combined:
        if not isinstance(fragment, str):
            raise ValueError(f"`{parameter}` must hold strings, got {fragment!r:.80}")
    return combined


def _checked(references: Mapping[str, object]) -> dict[str, object]:
    if not isinstance(references, Mapping):
        raise ValueError(f"`implicit_references` must be a mapping of names to values, got {references!r:.80}")
    for name in references:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"implicit reference names must be Python identifiers, got {name!r}")
    return dict(references)


def _merged(outer: Mapping[str, object], added: Mapping[str, object]) -> Mapping[str, object]:
    """`outer` plus `added`; a name bound in both must name the very same object."""
    added = _checked(added)
    if not added:
        return outer
    for name, value in added.items():
        if name in outer and outer[name] is not value:
            raise NighthawkError(
                f"implicit reference {name!r} is already set by an enclosing scope to another value "
                f"({type(outer[name]).__name__}, now {type(value).__name__}); use another name, or "
                "`nighthawk.scope(mode=\"replace\", implicit_references=...)` to replace the enclosing ones"
            )
    return {**outer, **added}
