"""Display objects filled from events: one step (`StepView`) and all the steps one cell started (`CellView`).

`StepView` keeps what the event stream said about one execution of a Natural block (and the steps nested in
it). `CellView` gathers the top-level steps a single cell started (one `%%natural` block, or a natural
function called 300 times from a loop or `df.apply`) into one display. Both give deterministic `text/plain`
and `text/html` from `_repr_mimebundle_` (no ids, no addresses; durations appear only in the HTML, inside
`<span class="nh-duration">` so an nbval sanitizer can blank them), and never a widget view: the live
widget is a separate, temporary output (see `_live`), so what stays in a notebook renders with no kernel.

The size of a cell's display does not grow with the number of steps: beyond a few, only the first ones,
the last ones and the ones that did not complete are shown in full, and the rest are counted. Event payloads
are already bounded, masked previews, so nothing here needs to mask again. The HTML itself is built in
`_html`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, assert_never

from nighthawk import events

__all__ = ["STEP_STATUSES", "CellView", "StepView", "ToolCallRecord", "shown_indices"]

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


class StepView:
    """One step (and its nested steps) as a display object.

    Feed it events with `apply`; display it with IPython's `display`. Until the step finishes the view shows
    `running`.
    """

    def __init__(self, started: events.StepStarted, *, mode: str = "html") -> None:
        self.step_id = started.step_id
        self.invocation_id = started.invocation_id
        self.parent_invocation_id = started.parent_invocation_id
        self.program = started.program
        self.model = started.model
        self.allowed_outcomes = started.allowed_outcomes
        self.mode = mode
        """Display mode: `widget`, `html`, `text` or `none` (see `NighthawkSettings.display`)."""
        self.status = "running"
        self.tool_calls: list[ToolCallRecord] = []
        self.outcome: events.OutcomeReached | None = None
        self.changes: tuple[events.LocalsChange, ...] = ()
        self.committed: tuple[str, ...] = ()
        self.unset: tuple[str, ...] = ()
        self.usage: events.UsageReported | None = None
        self.failure: events.StepFailed | None = None
        self.prompt: events.PromptRendered | None = None
        self.duration_s: float | None = None
        self.children: list[StepView] = []
        self._lock = threading.RLock()

    def __repr__(self) -> str:  # cheap on purpose: no rendering
        return f"<StepView {self.step_id} {self.status}>"

    # --- events ------------------------------------------------------------------------------------

    def apply(self, event: events.Event) -> bool:
        """Record one event of this step; return whether anything shown changed."""
        with self._lock:
            return self._record(event)

    def add_child(self, child: StepView) -> None:
        """Attach a step started from inside this one (a natural function called by a tool)."""
        with self._lock:
            self.children.append(child)

    def _record(self, event: events.Event) -> bool:
        match event:
            case events.ToolCallStarted():
                self.tool_calls.append(
                    ToolCallRecord(call_id=event.call_id, tool_name=event.tool_name, arguments=event.arguments)
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
            case events.PromptRendered():
                if self.prompt is not None:  # the first request's prompt is the one that matters
                    return False
                self.prompt = event
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

    # --- static forms ------------------------------------------------------------------------------

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return _bundle(self.mode, self.text, self.html)

    def text(self) -> str:
        """Deterministic plain text of the current state (no durations)."""
        from ._text import step_lines

        with self._lock:
            return "\n".join(step_lines(self, indent=""))

    def html(self) -> str:
        """Deterministic HTML of the current state; durations sit in `<span class="nh-duration">`."""
        from ._html import CSS, step_html

        with self._lock:
            return CSS + step_html(self)


class CellView:
    """Every top-level step one cell started, shown as one display.

    One step is shown exactly like its `StepView`. Several steps get a summary (how many completed,
    raised, failed or are still running; requests, tokens, time), the programs they ran, and the steps
    chosen by `shown_indices` in full, each folded under a one-line summary.
    """

    def __init__(self, *, mode: str) -> None:
        self.mode = mode
        """Display mode of the whole cell, fixed when its first step started."""
        self.steps: list[StepView] = []
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<CellView {len(self.steps)} steps>"

    def add(self, view: StepView) -> None:
        with self._lock:
            self.steps.append(view)

    def snapshot(self) -> list[StepView]:
        """The steps so far (a copy: events may add steps from the runner's thread)."""
        with self._lock:
            return list(self.steps)

    @property
    def running(self) -> int:
        return sum(1 for view in self.snapshot() if not view.finished)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return _bundle(self.mode, self.text, self.html)

    def text(self) -> str:
        """Deterministic plain text: the step itself, or a bounded summary of many."""
        from ._text import cell_lines

        return "\n".join(cell_lines(self.snapshot()))

    def html(self) -> str:
        """Deterministic HTML: the step itself, or a bounded summary of many."""
        from ._html import CSS, cell_html

        return CSS + cell_html(self.snapshot())

    def live_html(self) -> str:
        """HTML for the live widget: the summary, the running steps in full and the latest finished one."""
        from ._html import CSS, live_html

        return CSS + live_html(self.snapshot())


def _bundle(mode: str, text: Any, page: Any) -> dict[str, Any]:
    """The static mime bundle of a display in `mode` (never a widget view: it must outlive the kernel)."""
    if mode == "none":
        return {}
    bundle: dict[str, Any] = {"text/plain": text()}
    if mode in ("widget", "html"):
        bundle["text/html"] = page()
    return bundle
