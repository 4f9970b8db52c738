"""Asking the oversight in force: the hooks a scope sets, the process-wide ones, and their decisions.

`nighthawk.scope(oversight=...)` puts an `Oversight` in force here (a context variable, so nested scopes
inherit it and `None` clears it); the kernel's confirm mode adds a process-wide one, asked after it, that
no scope clears. `tools.py` asks the tool-call hooks before a call runs (`review_tool_call`), `outcome.py`
asks them before a return expression is evaluated, as a call of `nh_outcome` (`review_return`), and the
runner asks the commit hooks once the outcome is resolved (`review_commit`). Hooks are user code and run like
it: a sync hook on the thread that started the block, an async one on the step's loop. Every decision is
an `OversightDecision` event. The public face is the package's `__init__.py`.

The runtime guards of the oversights in force are enforced through a second context variable, set only
around the evaluation of model-written code (`guarding`, used by `tools.py` and `outcome.py`) and read by
the audit hook of `_audit.py`; `step_machinery` (the runner) keeps a step started by guarded model code
from enforcing them on its own work, and carries them to the model code it evaluates.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .. import events
from ..errors import NighthawkError, OversightRejectedError, ToolValidationError, not_committed
from ..step._boundary import ToolBoundaryError
from ..step._context import StepContext
from ..step._outcome_schema import OUTCOME_TOOL
from ._kinds import (
    Accept,
    GUARDS_NAME,
    STEP_MACHINERY,
    Enforcement,
    Isolation,
    Oversight,
    Reject,
    Rewrite,
    RuntimeGuard,
    StepCommitProposal,
    ToolCall,
    combine,
    label,
)

if TYPE_CHECKING:
    # A type only: the outcome models import pydantic, which `import nighthawk` leaves out.
    from ..step._outcome_kinds import Resolution

__all__ = [
    "add_process_oversight",
    "guarding",
    "handling_value",
    "forget_in_child",
    "in_force",
    "isolation_in_force",
    "overseeing",
    "overseeing_also",
    "remove_process_oversight",
    "review_commit",
    "review_return",
    "review_tool_call",
    "step_machinery",
]

_REFUSED_GUIDANCE = (
    "Oversight refused this call, so it did not run. Do not send it again; reach the goal another way, or "
    "end the step with a `raise` outcome if it cannot be done without it."
)

_scoped: ContextVar[Oversight | None] = ContextVar("nighthawk_oversight", default=None)
_process: list[Oversight] = []
_enforced: ContextVar[Enforcement | None] = ContextVar("nighthawk_runtime_guards", default=None)
"""The runtime guards enforced on this thread or task: set only while model-written code runs."""
_by_thread: dict[int, Enforcement] = {}
"""The guards of the synchronous evaluation each thread is running: what a fresh `contextvars.Context()`,
in which `_enforced` is empty, does not drop."""
_carried: ContextVar[tuple[RuntimeGuard, ...]] = ContextVar("nighthawk_carried_guards", default=())
"""The guards of the model code that started the current step, for the model code it evaluates."""


# --- what is in force ---------------------------------------------------------------------------------


@contextmanager
def overseeing(oversight: Oversight | None) -> Iterator[None]:
    """Put `oversight` in force inside the `with` block, replacing the enclosing scope's (`None` clears it)."""
    if oversight is not None and not isinstance(oversight, Oversight):
        raise TypeError(
            f"`oversight` must be a `nighthawk.oversight.Oversight` or None, got {oversight!r}; build one with "
            "`Oversight(inspect_tool_call=..., inspect_step_commit=...)`"
        )
    token = _scoped.set(oversight)
    try:
        yield
    finally:
        _scoped.reset(token)


@contextmanager
def overseeing_also(oversight: Oversight) -> Iterator[None]:
    """Ask `oversight` too, after the hooks in force, inside the `with` block (nothing changes when it is
    asked already)."""
    if oversight in in_force():
        yield
        return
    scoped = _scoped.get()
    with overseeing(oversight if scoped is None else combine(scoped, oversight)):
        yield


def in_force() -> tuple[Oversight, ...]:
    """The plain oversights asked now, in order: the scope's, then the process-wide ones."""
    scoped = _scoped.get()
    chain = scoped.chain() if scoped is not None else ()
    return chain + tuple(part for oversight in _process for part in oversight.chain())


def isolation_in_force() -> Isolation | None:
    """The walls of the child the model's code of a step runs in, when an oversight in force isolates it."""
    if _scoped.get() is None and not _process:
        return None  # the common case, without building the chain
    return next((oversight.isolation for oversight in in_force() if oversight.isolation is not None), None)


def forget_in_child() -> None:
    """Hold nothing and ask no one from here on: in an isolated step's child, where the walls hold the model's
    code, and the hooks (a person asked through the kernel's stdin) belong to the kernel."""
    _scoped.set(None)
    _process.clear()
    _enforced.set(None)
    _by_thread.clear()
    _carried.set(())


# --- runtime guards -------------------------------------------------------------------------------------


def guarding(
    step: StepContext, tool_name: str, *, blocking: bool = False, handling: bool = False
) -> AbstractContextManager[Mapping[str, object] | None]:
    """Around the evaluation of model-written code for `tool_name` (`nh_eval`, `nh_assign`, `nh_outcome`).

    Inside, the runtime guards in force, with those already enforced or carried here (a natural function
    called by guarded model code cannot shed them), are enforced on this thread or task; each operation
    they refused is recorded as an `OversightDecision` once the block is left. `blocking` says that the
    block runs synchronously, so that nothing but model code runs on the thread meanwhile: the guards are
    then enforced on the thread too, whatever context the model's code switches to.

    The block gets the names to add to the namespace the model's code runs in (`None` when nothing is
    enforced): the mark that holds the functions it makes to the same guards wherever they run later.

    `handling` says that the block is Nighthawk's own work on a value the model's code made (validating,
    storing, rendering it): what that value's methods do is held, but not the user's own functions called
    there (the validators of a write binding, the `__repr__` of the user's class).
    """
    current = _enforced.get()
    if current is None and _scoped.get() is None and not _process and not _carried.get():
        return nullcontext()  # the common case: no oversight at all
    guards = _union(
        _carried.get(),
        current.guards if current is not None else (),
        tuple(guard for oversight in in_force() for guard in oversight.runtime),
    )
    return _guarding(step, tool_name, guards, blocking, handling) if guards else nullcontext()


@contextmanager
def _guarding(
    step: StepContext, tool_name: str, guards: tuple[RuntimeGuard, ...], blocking: bool, handling: bool
) -> Iterator[Mapping[str, object]]:
    from ._audit import install  # here: the hook and its checks load with the first guarded evaluation

    install(_enforced, _by_thread)
    enforcement = Enforcement(guards, mode="handling" if handling else "evaluation")
    token = _enforced.set(enforcement)
    thread = threading.get_ident()
    outer = _by_thread.get(thread)
    if blocking:
        _by_thread[thread] = enforcement
    try:
        yield {GUARDS_NAME: guards}
    finally:
        _enforced.reset(token)
        if blocking:
            if outer is None:
                del _by_thread[thread]
            else:
                _by_thread[thread] = outer
        # Outside the guard: listeners (displays, telemetry) are not model code.
        for refusal in enforcement.refusals:
            _record(step, "runtime", refusal.policy, "rejected", refusal.message, tool_name=tool_name)


def handling_value() -> AbstractContextManager[None]:
    """Inside a guarded evaluation, around Nighthawk's own look at the value it made (the secret scan): held
    like the rest of the evaluation, but for the user's own functions it calls (see `guarding`)."""
    return _Handling()


class _Handling:
    """Switches the evaluation's own enforcement (the one the context variable and the thread hold) to
    `handling` and back: a class, not a generator, as it runs for every guarded evaluation."""

    __slots__ = ("switched",)

    def __enter__(self) -> None:
        current = _enforced.get()
        self.switched = current if current is not None and current.mode == "evaluation" and current.guards else None
        if self.switched is not None:
            self.switched.mode = "handling"

    def __exit__(self, *_: object) -> None:
        if self.switched is not None:
            self.switched.mode = "evaluation"


@contextmanager
def step_machinery() -> Iterator[None]:
    """Around a step's own work: the guards of the model code that started it (a natural function it
    calls) are not enforced on the step's requests and bookkeeping, but carried to the model code the step
    evaluates; a function that model code made is still held to them when the step's work calls it."""
    current = _enforced.get()
    if current is None or not current.guards:
        yield
        return
    carried = _carried.set(_union(_carried.get(), current.guards))
    cleared = _enforced.set(STEP_MACHINERY)  # also over the thread's enforcement
    try:
        yield
    finally:
        _enforced.reset(cleared)
        _carried.reset(carried)


def _union(*groups: tuple[RuntimeGuard, ...]) -> tuple[RuntimeGuard, ...]:
    return tuple(dict.fromkeys(guard for group in groups for guard in group))


def add_process_oversight(oversight: Oversight) -> None:
    """Ask `oversight` for every block of the process, after the scope's hooks (no scope clears it)."""
    if oversight not in _process:
        _process.append(oversight)


def remove_process_oversight(oversight: Oversight) -> None:
    """Undo `add_process_oversight`."""
    if oversight in _process:
        _process.remove(oversight)


# --- asking the hooks ---------------------------------------------------------------------------------


async def review_tool_call(
    step: StepContext, tool_name: str, arguments: Mapping[str, object], call_id: str
) -> ToolBoundaryError | None:
    """Ask the tool-call hooks in force about a call; the error to hand the model when one refuses it.

    A hook that raises ends the step with its exception: a broken guard must not let calls through.
    """
    refusal = await _first_refusal(step, tool_name, arguments, call_id)
    if refusal is None:
        return None
    oversight, reason = refusal
    return ToolBoundaryError("execution", reason or f"refused by {label(oversight)}", _REFUSED_GUIDANCE)


async def review_return(step: StepContext, expression: str) -> None:
    """Ask the tool-call hooks in force about a return expression before it is evaluated.

    The hooks see it as a call of the tool `nh_outcome` (`OUTCOME_TOOL`, the outcome's own tool) with the arguments
    `{"kind": "return", "return_expression": ...}`: evaluating it runs model-written code like `nh_eval`.

    Raises:
        OversightRejectedError: A hook rejected it; nothing was evaluated or committed.
    """
    arguments = {"kind": "return", "return_expression": expression}
    refusal = await _first_refusal(step, OUTCOME_TOOL, arguments, f"{OUTCOME_TOOL}-{time.perf_counter_ns()}")
    if refusal is not None:
        oversight, reason = refusal
        shown = expression if len(expression) <= 300 else expression[:300] + "..."
        raise OversightRejectedError(
            f"{label(oversight)} rejected the return expression {shown!r} at {step.step_id}: {reason}; it was not "
            f"evaluated, and {not_committed(step.program.writes)}"
        )


async def _first_refusal(
    step: StepContext, tool_name: str, arguments: Mapping[str, object], call_id: str
) -> tuple[Oversight, str] | None:
    """Ask each tool-call hook in force in turn; the first that rejects, with its reason, or `None`."""
    asked = [oversight for oversight in in_force() if oversight.inspect_tool_call is not None]
    if not asked:
        return None
    call = ToolCall(
        tool_name=tool_name,
        argument_name_to_value=MappingProxyType(dict(arguments)),
        step_id=step.step_id,
        execution_context=step.execution_context,
        processed_natural_program=step.program.prompt_text,
        step_locals=MappingProxyType(step.step_locals),
        step_globals=MappingProxyType(step.step_globals),
    )
    for oversight in asked:
        decision = await _ask(oversight.inspect_tool_call, call)
        match decision:
            case Accept():
                _record(step, "inspect_tool_call", oversight, "accepted", decision.reason, tool_name=tool_name, call_id=call_id)
            case Reject():
                _record(step, "inspect_tool_call", oversight, "rejected", decision.reason, tool_name=tool_name, call_id=call_id)
                return oversight, decision.reason
            case _:
                raise _bad_decision("inspect_tool_call", oversight, decision, "`Accept()` or `Reject(reason)`")
    return None


async def review_commit(step: StepContext, resolution: Resolution, values: Mapping[str, object]) -> Mapping[str, object]:
    """Ask the commit hooks in force about what a step is about to commit; the values to commit.

    Raises:
        OversightRejectedError: A hook rejected the commit.
        ToolValidationError: A rewritten value does not fit its write binding's type.
        NighthawkError: A hook answered something other than a decision, or rewrote a name that is not a
            write binding of the block.
    """
    asked = [oversight for oversight in in_force() if oversight.inspect_step_commit is not None]
    if not asked or resolution.exception is not None:
        return values
    from ..threads._loop import on_user_thread  # here, not at the top: `import nighthawk` stays free of asyncio

    for oversight in asked:
        proposal = StepCommitProposal(
            proposed_binding_name_to_value=MappingProxyType(dict(values)),
            proposed_step_outcome=resolution.outcome,
            proposed_return_value=resolution.value,
            output_binding_names=step.program.writes,
            step_id=step.step_id,
            execution_context=step.execution_context,
            processed_natural_program=step.program.prompt_text,
        )
        decision = await _ask(oversight.inspect_step_commit, proposal)
        match decision:
            case Accept():
                _record(step, "inspect_step_commit", oversight, "accepted", decision.reason)
            case Reject():
                _record(step, "inspect_step_commit", oversight, "rejected", decision.reason)
                raise OversightRejectedError(
                    f"{label(oversight)} rejected the step at {step.step_id}: {decision.reason}; "
                    f"{not_committed(step.program.writes)}"
                )
            case Rewrite():
                # Validators and coercions are the user's code: on the user's thread.
                values = await on_user_thread(lambda: _rewritten(step, oversight, values, decision))
                _record(
                    step, "inspect_step_commit", oversight, "rewritten", decision.reason,
                    names=tuple(decision.rewritten_binding_name_to_value),
                )
            case _:
                raise _bad_decision(
                    "inspect_step_commit", oversight, decision, "`Accept()`, `Reject(reason)` or `Rewrite(...)`"
                )
    return values


async def _ask(hook: Any, subject: object) -> object:
    """Call a hook like a user tool: a sync one on the user's thread, an async one awaited on the step's loop."""
    from ..threads._loop import call_user  # here, not at the top: `import nighthawk` stays free of asyncio

    return await call_user(hook, subject)


def _rewritten(step: StepContext, oversight: Oversight, values: Mapping[str, object], rewrite: Rewrite) -> dict[str, object]:
    result = dict(values)
    for name, value in rewrite.rewritten_binding_name_to_value.items():
        if name not in step.program.writes:
            raise NighthawkError(
                f"{label(oversight)} rewrote {name!r}, which is not a write binding of the block at {step.step_id} "
                f"(its write bindings: {', '.join(step.program.writes) or 'none'}); {not_committed(step.program.writes)}"
            )
        try:
            result[name] = step.validate_binding(name, value)
        except ToolBoundaryError as exc:
            raise ToolValidationError(
                f"{label(oversight)} rewrote {name!r} to a value that does not fit: {exc.message}"
            ) from exc
    return result


def _bad_decision(hook: str, oversight: Oversight, decision: object, allowed: str) -> NighthawkError:
    return NighthawkError(
        f"`{hook}` of {label(oversight)} returned {decision!r}; return {allowed} from `nighthawk.oversight`"
    )


def _record(
    step: StepContext,
    hook: str,
    oversight: Oversight | str,
    decision: str,
    reason: str | None,
    *,
    tool_name: str | None = None,
    call_id: str | None = None,
    names: tuple[str, ...] = (),
) -> None:
    if events.listening():
        events.emit(
            events.OversightDecision(
                invocation_id=step.invocation_id,
                hook=hook,  # type: ignore[arg-type]
                oversight=oversight if isinstance(oversight, str) else label(oversight),
                decision=decision,  # type: ignore[arg-type]
                reason=reason,
                tool_name=tool_name,
                call_id=call_id,
                names=names,
            )
        )
