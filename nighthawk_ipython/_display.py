"""The display object of one step: filled from events, shown as a widget, HTML or plain text.

`StepView` keeps what the event stream said about one execution of a Natural block (and the steps nested in
it) and renders its *final* state. `_repr_mimebundle_` always gives deterministic `text/plain` and
`text/html` (no ids, no addresses; durations appear only in the HTML, inside `<span class="nh-duration">`
so an nbval sanitizer can blank them), and adds the widget view when a kernel with comms is live. Event
payloads are already bounded, masked previews, so nothing here needs to mask again.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, assert_never

from nighthawk import events

if TYPE_CHECKING:
    from ._widgets import StepWidget

__all__ = ["STEP_STATUSES", "StepView", "ToolCallRecord"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

STEP_STATUSES: tuple[str, ...] = ("running", "completed", "raised", "failed", "interrupted")
"""Every status a step can show; all but `running` come from `StepFinished.status`."""

_CSS = (
    "<style>"
    ".nh-step{font-family:var(--jp-content-font-family,sans-serif);font-size:13px;border-left:3px solid #888;"
    "padding:2px 8px;margin:4px 0}"
    ".nh-step.nh-completed{border-color:#2e7d32}.nh-step.nh-raised,.nh-step.nh-failed{border-color:#c62828}"
    ".nh-step.nh-interrupted{border-color:#ef6c00}"
    ".nh-step table{border-collapse:collapse}.nh-step td,.nh-step th{padding:1px 6px;text-align:left;"
    "vertical-align:top}.nh-step pre{white-space:pre-wrap;margin:2px 0}.nh-step code{white-space:pre-wrap}"
    "</style>"
)


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


class StepView:
    """One step (and its nested steps) as a display object.

    Feed it events with `apply`; display it with IPython's `display`. Until the step finishes the view shows
    `running`; the static forms are meant to be displayed once, after the step finished.
    """

    def __init__(self, started: events.StepStarted, *, mode: str = "widget") -> None:
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
        self.usage: events.UsageReported | None = None
        self.failure: events.StepFailed | None = None
        self.prompt: events.PromptRendered | None = None
        self.duration_s: float | None = None
        self.children: list[StepView] = []
        self._widget: StepWidget | None = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:  # cheap on purpose: no rendering
        return f"<StepView {self.step_id} {self.status}>"

    # --- events ------------------------------------------------------------------------------------

    def apply(self, event: events.Event) -> None:
        """Record one event of this step and refresh the live widget, if one was built."""
        with self._lock:
            section = self._record(event)
            if section is not None and self._widget is not None:
                self._widget.refresh(self, section)

    def add_child(self, child: StepView) -> None:
        """Attach a step started from inside this one (a natural function called by a tool)."""
        with self._lock:
            self.children.append(child)
            if self._widget is not None:
                self._widget.refresh(self, "nested")

    def child_changed(self, child: StepView) -> None:
        """A nested step changed: the parent's static summary of it is out of date."""
        with self._lock:
            if self._widget is not None:
                self._widget.refresh(self, "nested")

    def _record(self, event: events.Event) -> str | None:
        """Store `event`; return the section of the view that changed, or `None`."""
        match event:
            case events.ToolCallStarted():
                self.tool_calls.append(
                    ToolCallRecord(call_id=event.call_id, tool_name=event.tool_name, arguments=event.arguments)
                )
                return "tools"
            case events.ToolCallFinished():
                record = next((call for call in reversed(self.tool_calls) if call.call_id == event.call_id), None)
                if record is None:  # a call whose start we did not see: show it anyway
                    record = ToolCallRecord(call_id=event.call_id, tool_name=event.tool_name, arguments="")
                    self.tool_calls.append(record)
                record.result = event.result if event.error_kind is None else None
                record.error_kind = event.error_kind
                record.error_message = event.error_message
                record.duration_s = event.duration_s
                return "tools"
            case events.PromptRendered():
                if self.prompt is None:  # the first request's prompt is the one that matters
                    self.prompt = event
                return "prompt"
            case events.OutcomeReached():
                self.outcome = event
                return "outcome"
            case events.Committed():
                self.changes = event.changes
                self.committed = event.names
                return "locals"
            case events.UsageReported():
                self.usage = event
                return "header"
            case events.StepFailed():
                self.failure = event
                return "outcome"
            case events.StepFinished():
                self.status = event.status
                self.duration_s = event.duration_s
                return "all"
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
                return None
            case _:
                assert_never(event)

    @property
    def finished(self) -> bool:
        return self.status != "running"

    # --- widget ------------------------------------------------------------------------------------

    def widget(self) -> StepWidget:
        """The ipywidgets view of this step, built on first use and kept up to date by `apply`."""
        with self._lock:
            if self._widget is None:
                from ._widgets import StepWidget

                self._widget = StepWidget.for_view(self)
            return self._widget

    # --- static forms ------------------------------------------------------------------------------

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        if self.mode == "none":
            return {}
        bundle: dict[str, Any] = {"text/plain": self.text()}
        if self.mode in ("widget", "html"):
            bundle["text/html"] = self.html()
        if self.mode == "widget" and _comms_live():
            bundle[WIDGET_MIME] = self.widget().view_data()
        return bundle

    def text(self) -> str:
        """Deterministic plain text of the current state (no durations)."""
        with self._lock:
            return "\n".join(_text_lines(self, indent=""))

    def html(self) -> str:
        """Deterministic HTML of the current state; durations sit in `<span class="nh-duration">`."""
        with self._lock:
            return _CSS + _html_step(self)

    # Fragments shared by the static HTML and the widget.

    def header_html(self) -> str:
        return _html_header(self)

    def tools_html(self) -> str:
        return _html_tools(self.tool_calls)

    def locals_html(self) -> str:
        return _html_locals(self.changes)

    def outcome_html(self) -> str:
        return _html_outcome(self)

    def prompt_html(self) -> str:
        return _html_prompt(self.prompt)


def _comms_live() -> bool:
    """Whether a kernel that can talk to widget models is running this code."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return getattr(shell, "kernel", None) is not None


# --- plain text -------------------------------------------------------------------------------------

def _summary(view: StepView) -> str:
    parts = [f"Natural step {view.step_id}", view.status, f"model {view.model}"]
    if view.usage is not None:
        parts.append(f"{view.usage.requests} request{'s' if view.usage.requests != 1 else ''}")
        parts.append(f"{view.usage.input_tokens} in / {view.usage.output_tokens} out tokens")
    return " · ".join(parts)


def _outcome_text(view: StepView) -> str | None:
    if view.failure is not None:
        if view.failure.interrupted:
            return "interrupted (nothing was committed)"
        return f"failed ({view.failure.error_kind}): {view.failure.error_type}: {view.failure.error_message}"
    outcome = view.outcome
    if outcome is None:
        return None
    match outcome.kind:
        case "return":
            return f"return {outcome.return_expression} -> {outcome.return_value}"
        case "raise":
            return f"raise {outcome.raise_error_type or 'Exception'}: {outcome.raise_message}"
        case kind:
            return kind


def _call_text(index: int, call: ToolCallRecord) -> str:
    head = f"{index}. {call.tool_name} {call.arguments}".rstrip()
    if call.error_kind is not None:
        return f"{head} -> error {call.error_kind}: {call.error_message}"
    if call.duration_s is None:
        return f"{head} -> (running)"
    return f"{head} -> {call.result}"


_CHANGE_MARK = {"added": "+", "changed": "~", "removed": "-"}


def _change_text(change: events.LocalsChange) -> str:
    scope = "committed" if change.committed else "step only"
    match change.change:
        case "added":
            values = f"{change.after}"
        case "removed":
            values = f"{change.before}"
        case "changed":
            values = f"{change.before} -> {change.after}"
        case other:
            assert_never(other)
    return f"{_CHANGE_MARK[change.change]} {change.name} = {values} ({scope})"


def _text_lines(view: StepView, indent: str) -> list[str]:
    lines = [indent + _summary(view)]
    inner = indent + "  "
    program = view.program.splitlines() or [""]
    lines.append(f"{inner}program: {program[0]}")
    lines.extend(f"{inner}         {line}" for line in program[1:])
    if view.tool_calls:
        lines.append(f"{inner}tool calls ({len(view.tool_calls)}):")
        lines.extend(f"{inner}  {_call_text(i, call)}" for i, call in enumerate(view.tool_calls, 1))
    if view.changes:
        lines.append(f"{inner}locals:")
        lines.extend(f"{inner}  {_change_text(change)}" for change in view.changes)
    outcome = _outcome_text(view)
    if outcome is not None:
        lines.append(f"{inner}outcome: {outcome}")
    for child in view.children:
        lines.append(f"{inner}nested:")
        lines.extend(_text_lines(child, inner + "  "))
    return lines


# --- HTML -------------------------------------------------------------------------------------------

def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f' <span class="nh-duration">{seconds:.2f} s</span>'


def _html_header(view: StepView) -> str:
    usage = ""
    if view.usage is not None:
        usage = (
            f" · {view.usage.requests} request{'s' if view.usage.requests != 1 else ''}"
            f" · {view.usage.input_tokens} in / {view.usage.output_tokens} out tokens"
        )
    return (
        f'<div class="nh-header"><b>Natural step</b> <code>{_e(view.step_id)}</code> · '
        f'<span class="nh-status">{_e(view.status)}</span> · model <code>{_e(view.model)}</code>'
        f"{usage}{_duration(view.duration_s)}</div>"
        f'<pre class="nh-program">{_e(view.program)}</pre>'
    )


def _html_tools(calls: list[ToolCallRecord]) -> str:
    if not calls:
        return '<div class="nh-tools"><i>no tool calls</i></div>'
    rows = []
    for index, call in enumerate(calls, 1):
        if call.error_kind is not None:
            result = f'<span class="nh-error">error {_e(call.error_kind)}: {_e(call.error_message)}</span>'
        elif call.duration_s is None:
            result = "<i>running</i>"
        else:
            result = f"<code>{_e(call.result)}</code>"
        rows.append(
            f"<tr><td>{index}</td><td><code>{_e(call.tool_name)}</code></td><td><code>{_e(call.arguments)}</code></td>"
            f"<td>{result}</td><td>{_duration(call.duration_s)}</td></tr>"
        )
    return (
        '<table class="nh-tools"><tr><th>#</th><th>tool</th><th>arguments</th><th>result</th><th>time</th></tr>'
        + "".join(rows)
        + "</table>"
    )


def _html_locals(changes: tuple[events.LocalsChange, ...]) -> str:
    if not changes:
        return '<div class="nh-locals"><i>no changes to step locals</i></div>'
    rows = "".join(
        f'<tr class="nh-{_e(change.change)}"><td>{_CHANGE_MARK[change.change]}</td><td><code>{_e(change.name)}</code></td>'
        f"<td>{_e(change.change)}</td><td>{'committed' if change.committed else 'step only'}</td>"
        f"<td><code>{_e(change.before if change.before is not None else '')}</code></td>"
        f"<td><code>{_e(change.after if change.after is not None else '')}</code></td></tr>"
        for change in changes
    )
    return (
        '<table class="nh-locals"><tr><th></th><th>name</th><th>change</th><th>scope</th><th>before</th>'
        f"<th>after</th></tr>{rows}</table>"
    )


def _html_outcome(view: StepView) -> str:
    text = _outcome_text(view)
    if text is None:
        return '<div class="nh-outcome"><i>no outcome yet</i></div>'
    return f'<div class="nh-outcome"><b>outcome</b> <code>{_e(text)}</code></div>'


def _html_prompt(prompt: events.PromptRendered | None) -> str:
    if prompt is None:
        return '<div class="nh-prompt"><i>no prompt was sent</i></div>'
    return (
        f'<div class="nh-prompt"><b>system</b><pre>{_e(prompt.system_prompt)}</pre>'
        f"<b>user</b><pre>{_e(prompt.user_prompt)}</pre></div>"
    )


def _html_step(view: StepView) -> str:
    nested = "".join(_html_step(child) for child in view.children)
    nested_section = (
        f"<details open><summary>Nested steps ({len(view.children)})</summary>{nested}</details>" if nested else ""
    )
    return (
        f'<div class="nh-step nh-{_e(view.status)}">'
        f"{_html_header(view)}{_html_outcome(view)}"
        f"<details open><summary>Tool calls ({len(view.tool_calls)})</summary>{_html_tools(view.tool_calls)}</details>"
        f"<details open><summary>Step locals ({len(view.changes)} changed)</summary>{_html_locals(view.changes)}</details>"
        f"{nested_section}"
        f"<details><summary>Prompt</summary>{_html_prompt(view.prompt)}</details>"
        "</div>"
    )
