"""What the event stream said about steps, in the form both renderers (`_text`, `_html`) read.

`StepRecord` keeps one execution of a Natural block (its tool calls, locals diff, outcome, usage, prompt
and the steps nested in it) as events arrive; `shown_indices` picks which of many steps are shown in full.
The display objects of `_display` build on these and hand them to the renderers, which import only this
module, so the dependencies run one way: `_display` -> `_html` -> `_text` -> `_records`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import assert_never

from nighthawk import events
from nighthawk.transcript._as_python import CallCode, step_as_python

__all__ = ["CELL_STEP_PREFIX", "STEP_STATUSES", "StepHistory", "StepRecord", "ToolCallRecord", "shown_indices", "with_nested"]

CELL_STEP_PREFIX = "In["
"""How the step id of a `%%natural` cell starts (`In[7]:2`); a natural function's is `module:line`."""

STEP_STATUSES: tuple[str, ...] = ("running", "completed", "raised", "failed", "interrupted")
"""Every status a step can show; all but `running` come from `StepFinished.status`."""

# How many steps of a long list are shown in full: the first few, the last few, and the first ones that
# did not complete. Everything else is counted, so a display's size is bounded whatever the step count.
SHOW_FIRST = 3
SHOW_LAST = 2
SHOW_PROBLEMS = 5


@dataclass(kw_only=True)
class ToolCallRecord:
    """One tool call as far as the events have told it."""

    call_id: str
    tool_name: str
    arguments: str
    """Bounded, masked JSON text of the arguments."""
    result: str | None = None
    """Bounded, masked preview of the result value; `None` while running or on error."""
    error_kind: str | None = None
    error_message: str | None = None
    duration_s: float | None = None
    """`None` while the call runs."""
    cut: str | None = None
    """The status of the step (`interrupted`, `failed`) when it ended before this call finished."""
    expression: str | None = None
    """The whole expression of an `nh_eval` or `nh_assign` call (masked), for the step's code."""
    target: str | None = None
    """Where an `nh_assign` call stored its value."""
    awaited: bool = False
    """The runtime awaited the value the expression gave (see `events.ToolCallFinished.awaited`)."""

    def code(self) -> CallCode:
        """The call as the step's code reads it: finished without an error, or not."""
        succeeded = self.error_kind is None and self.duration_s is not None
        return CallCode(
            tool_name=self.tool_name,
            expression=self.expression,
            target=self.target,
            arguments=self.arguments,
            succeeded=succeeded,
            awaited=self.awaited,
        )


def shown_indices(statuses: list[str]) -> list[int]:
    """Which of a list of steps are shown in full: first and last few, and the first ones not completed.

    Args:
        statuses: The status of each step, in start order.

    Returns:
        Sorted indices into `statuses`; at most `SHOW_FIRST + SHOW_LAST + SHOW_PROBLEMS` of them.
    """
    count = len(statuses)
    chosen = set(range(min(SHOW_FIRST, count))) | set(range(max(count - SHOW_LAST, 0), count))
    problems = [index for index, status in enumerate(statuses) if status != "completed" and index not in chosen]
    chosen.update(problems[:SHOW_PROBLEMS])
    return sorted(chosen)


class StepRecord:
    """What the events said about one step (and the steps nested in it), for the renderers to read.

    Feed it events with `apply`. Until the step finishes its status is `running`.
    """

    def __init__(self, started: events.StepStarted) -> None:
        self.step_id = started.step_id
        self.invocation_id = started.invocation_id
        self.parent_invocation_id = started.parent_invocation_id
        self.program = started.program
        self.model = started.model
        self.allowed_outcomes = started.allowed_outcomes
        self.placeholder = started.placeholder
        self.local_sources = started.local_sources
        self.isolated = started.isolated
        self.status = "running"
        self.tool_calls: list[ToolCallRecord] = []
        self.outcome: events.OutcomeReached | None = None
        self.changes: tuple[events.LocalsChange, ...] = ()
        self.committed: tuple[str, ...] = ()
        self.unset: tuple[str, ...] = ()
        self.usage: events.UsageReported | None = None
        self.failure: events.StepFailed | None = None
        self.decisions: list[events.OversightDecision] = []
        """Rejections and rewrites by oversight hooks (acceptances are not shown)."""
        self.prompt: events.PromptRendered | None = None
        self.text_answers = 0
        """Responses in which the model called no tool (it answered in plain text, or not at all)."""
        self.last_text: str | None = None
        """What the model wrote in the latest of those responses (clipped and masked by the core)."""
        self.duration_s: float | None = None
        self.children: list[StepRecord] = []
        self._code: str | None = None
        self._lock = threading.RLock()

    # --- events ------------------------------------------------------------------------------------

    def apply(self, event: events.Event) -> bool:
        """Record one event of this step; return whether anything shown changed."""
        with self._lock:
            return self._record(event)

    def add_child(self, child: StepRecord) -> None:
        """Attach a step started from inside this one (a natural function called by a tool)."""
        with self._lock:
            self.children.append(child)

    def _record(self, event: events.Event) -> bool:
        match event:
            case events.ToolCallStarted():
                self.tool_calls.append(
                    ToolCallRecord(
                        call_id=event.call_id,
                        tool_name=event.tool_name,
                        arguments=event.arguments,
                        expression=event.expression,
                        target=event.target,
                    )
                )
            case events.ToolCallFinished():
                record = next((call for call in reversed(self.tool_calls) if call.call_id == event.call_id), None)
                if record is None:  # a call whose start we did not see: show it anyway
                    record = ToolCallRecord(call_id=event.call_id, tool_name=event.tool_name, arguments="")
                    self.tool_calls.append(record)
                record.result = event.result if event.error_kind is None else None
                record.error_kind = event.error_kind
                record.error_message = event.error_message
                record.duration_s = event.duration_s
                record.awaited = event.awaited
            case events.PromptRendered():
                if self.prompt is not None:  # the first request's prompt is the one that matters
                    return False
                self.prompt = event
            case events.ModelText():
                self.text_answers = event.count
                self.last_text = event.text
            case events.OutcomeReached():
                self.outcome = event
            case events.Committed():
                self.changes = event.changes
                self.committed = event.names
                self.unset = event.unset
            case events.UsageReported():
                self.usage = event
            case events.StepFailed():
                self.failure = event
            case events.StepFinished():
                self.status = event.status
                self.duration_s = event.duration_s
                for call in self.tool_calls:  # calls the interrupt or the failure cut short
                    if call.duration_s is None and call.error_kind is None and event.status != "completed":
                        call.cut = event.status
            case events.OversightDecision():
                if event.decision == "accepted":
                    return False
                self.decisions.append(event)
            case (
                events.StepStarted()
                | events.Assignment()
                | events.ExecutorStarted()
                | events.ExecutorFinished()
                | events.RunStarted()
                | events.ScopeStarted()
                | events.ScopeFinished()
            ):
                # Assignments show up in the tool calls and the locals diff; the rest is not per step.
                return False
            case _:
                assert_never(event)
        return True

    @property
    def finished(self) -> bool:
        return self.status != "running"

    @property
    def in_cell(self) -> bool:
        """Whether the block is a `%%natural` cell (its step id is the cell's, `In[n]:line`), not a function's."""
        return self.step_id.startswith(CELL_STEP_PREFIX) and self.parent_invocation_id is None

    def as_python(self) -> str:
        """The Python this step ran (`nighthawk.transcript._as_python`), from what its events said; made once the step
        finished (nothing it shows changes after that, and the live view asks again at every render)."""
        with self._lock:
            if self._code is not None:
                return self._code
            failure = None
            if self.failure is not None:
                failure = "was interrupted" if self.failure.interrupted else f"failed ({self.failure.error_type})"
            rewritten = [
                name
                for decision in self.decisions
                if decision.hook == "inspect_step_commit" and decision.decision == "rewritten"
                for name in decision.names
            ]
            calls = [call.code() for call in self.tool_calls]
            code = step_as_python(
                calls,
                self.outcome,
                cell=self.in_cell,
                failure=failure,
                rewritten=rewritten,
                placeholder=self.placeholder,
                local_sources=self.local_sources,
                isolated=self.isolated,
            )
            if self.finished:
                self._code = code
            return code


def with_nested(steps: list[StepRecord]) -> list[StepRecord]:
    """`steps` and, after each, the finished steps started inside it (a natural function a tool called), depth first."""
    found: list[StepRecord] = []
    for step in steps:
        found.append(step)
        found.extend(with_nested([child for child in list(step.children) if child.finished]))
    return found


class StepHistory:
    """The latest finished steps by cell (execution count; its last top-level step) and by step id (nested
    steps too), for `%nighthawk code`.

    Bounded: `keep` cells and `keep` step ids, the oldest dropped first, and one step each (a cell that ran a
    natural function 300 times keeps its last step), so a long session holds a few hundred records at most.
    """

    def __init__(self, keep: int = 100) -> None:
        self._keep = keep
        self._by_cell: dict[int, StepRecord] = {}
        self._by_id: dict[str, StepRecord] = {}
        self._last: StepRecord | None = None
        self._lock = threading.Lock()

    def add(self, count: int | None, steps: list[StepRecord]) -> None:
        """Keep the finished ones of `steps`, which cell `count` started (`None`: not known)."""
        finished = [step for step in steps if step.finished]
        if not finished:
            return
        with self._lock:
            for step in with_nested(finished):
                self._by_id.pop(step.step_id, None)
                self._by_id[step.step_id] = step
            self._last = finished[-1]
            if count is not None:
                self._by_cell.pop(count, None)
                self._by_cell[count] = finished[-1]
            for kept in (self._by_cell, self._by_id):
                while len(kept) > self._keep:
                    del kept[next(iter(kept))]

    def find(self, key: str | None) -> StepRecord | None:
        """The last step (`key` is `None`), the last step of cell `key` (digits), or the last with step id `key`."""
        with self._lock:
            if key is None:
                return self._last
            if key.isdigit():
                return self._by_cell.get(int(key))
            return self._by_id.get(key)

    def known(self) -> tuple[list[int], list[str]]:
        """Every step `find` can give, most recent last: the cells by execution count, then the step ids of
        the steps no cell gives (a cell's `%%natural` block is its cell's step; a nested one is not)."""
        with self._lock:
            given = {id(step) for step in self._by_cell.values()}
            return list(self._by_cell), [key for key, step in self._by_id.items() if id(step) not in given]
