"""The HTML form of step displays: plain HTML with `<details>` for anything that folds.

It has to read the same in a live JupyterLab, after a reload with no kernel, in `jupyter nbconvert --to html`,
and on renderers that drop `<style>` (GitHub): so everything that matters for reading is an inline style.
Tables are left-aligned explicitly (notebook CSS right-aligns table cells with a more specific selector
than a stylesheet here could use), code is monospaced, long values are folded, and the exact prompt of a
step sits under one `<summary>`. Durations are the only non-deterministic text, each inside
`<span class="nh-duration">` so an nbval sanitizer can blank them.
"""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING

from nighthawk.transcript._unseen import visible_controls

from ._records import StepRecord, ToolCallRecord, shown_indices
from ._text import (
    CHANGE_MARK,
    SCOPE_HELP,
    SHOW_PROGRAMS,
    change_scope,
    compact_text,
    counts_text,
    decision_text,
    gap_text,
    outcome_text,
    programs,
    step_usage,
    text_answers,
    total_usage,
)

if TYPE_CHECKING:
    from nighthawk import events

__all__ = ["CSS", "cell_html", "live_html", "step_html"]

CSS = (
    "<style>"
    ".nh-step summary,.nh-cell summary{cursor:pointer}"
    ".nh-step details>summary{margin:2px 0}"
    "</style>"
)
"""Niceties only; what matters for reading is inline (some renderers drop `<style>`)."""

_COLORS = {"running": "#888", "completed": "#2e7d32", "raised": "#c62828", "failed": "#c62828", "interrupted": "#ef6c00"}
_BOX = "font-family:var(--jp-content-font-family,sans-serif);font-size:13px;text-align:left;padding:2px 8px;margin:4px 0;"
_TABLE = ' style="border-collapse:collapse;margin:2px 0;table-layout:auto"'
_CELL = "text-align:left;vertical-align:top;padding:1px 8px 1px 0;"
_TH = f' style="{_CELL}font-weight:bold;border-bottom:1px solid #ccc"'
_TD = f' style="{_CELL}"'
_PRE = ' style="white-space:pre-wrap;margin:2px 0;text-align:left;font-family:var(--jp-code-font-family,monospace)"'
_CODE = ' style="font-family:var(--jp-code-font-family,monospace);white-space:pre-wrap"'
# A value longer than this (or spanning lines) is folded: its start shows, the whole value one click away.
_FOLD_AT = 80
# The core's thumbnails are JPEGs that already fit 160x120 px (`THUMBNAIL_SIZE`); the CSS keeps it so on any screen.
_THUMBNAIL = "max-width:160px;max-height:120px;border:1px solid #ccc"
_LIVE_CALLS = 20
"""Tool calls of a running step the live widget shows (the latest ones)."""


def _e(text: object) -> str:
    """Text for HTML; a character that would reorder or hide what follows (a bidi override) shows as `<U+XXXX>`."""
    return html.escape(visible_controls(str(text)), quote=True)


def _code(text: object) -> str:
    return f"<code{_CODE}>{_e(text)}</code>"


def _value(text: str | None) -> str:
    """A value preview as code; folded under its first characters when long or multi-line."""
    if text is None:
        return ""
    if len(text) <= _FOLD_AT and "\n" not in text:
        return _code(text)
    head = text.splitlines()[0][: _FOLD_AT - 20] if text else ""
    return (
        f"<details><summary>{_code(head + '…')} <i>({len(text)} characters)</i></summary>"
        f"<pre{_PRE}>{_e(text)}</pre></details>"
    )


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f' <span class="nh-duration">{seconds:.2f} s</span>'


def _row(cells: list[str], *, head: bool = False, css_class: str = "") -> str:
    tag, style = ("th", _TH) if head else ("td", _TD)
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<tr{attribute}>" + "".join(f"<{tag}{style}>{cell}</{tag}>" for cell in cells) + "</tr>"


def _table(css_class: str, header: list[str], rows: list[str]) -> str:
    return f'<table class="{css_class}"{_TABLE}>{_row(header, head=True)}{"".join(rows)}</table>'


def _box(status: str, css_class: str, body: str, *, tag: str = "div", open_: bool = False) -> str:
    style = f"{_BOX}border-left:3px solid {_COLORS.get(status, '#888')}"
    opened = " open" if open_ else ""
    return f'<{tag} class="{css_class} nh-{_e(status)}" style="{style}"{opened}>{body}</{tag}>'


# --- one step ---------------------------------------------------------------------------------------

def _header(view: StepRecord) -> str:
    usage = step_usage(view)
    usage = "" if usage is None else " · " + _e(usage)
    return (
        f'<div class="nh-header"><b>Natural step</b> {_code(view.step_id)} · '
        f'<span class="nh-status">{_e(view.status)}</span> · model {_code(view.model)}'
        f"{usage}{_duration(view.duration_s)}</div>"
        f'<pre class="nh-program"{_PRE}>{_e(view.program)}</pre>'
    )


def _tools(calls: list[ToolCallRecord], first: int = 1) -> str:
    if not calls:
        return '<div class="nh-tools"><i>no tool calls</i></div>'
    rows = []
    for index, call in enumerate(calls, first):
        if call.error_kind is not None:
            result = f'<span class="nh-error" style="color:#c62828">error {_e(call.error_kind)}: {_e(call.error_message)}</span>'
        elif call.duration_s is None:
            result = f"<i>{_e(call.cut or 'running')}</i>"
        else:
            result = _value(call.result)
        rows.append(_row([str(index), _code(call.tool_name), _value(call.arguments), result, _duration(call.duration_s)]))
    return _table("nh-tools", ["#", "tool", "arguments", "result", "time"], rows)


def _locals(changes: tuple[events.LocalsChange, ...], unset: tuple[str, ...]) -> str:
    if unset:
        return _locals(changes, ()) + f'<div class="nh-unset">left unset: {_e(", ".join(unset))}</div>'
    if not changes:
        return '<div class="nh-locals"><i>no changes to step locals</i></div>'
    rows = []
    scopes = []
    for change in changes:
        scope = change_scope(change)
        scopes.append(scope)
        rows.append(
            _row(
                [CHANGE_MARK[change.change], _code(change.name), _e(change.change),
                 f'<span title="{_e(SCOPE_HELP[scope])}">{_e(scope)}</span>', _value(change.before), _value(change.after)],
                css_class=f"nh-{_e(change.change)}",
            )
        )
    legend = " · ".join(f"<i>{_e(scope)}</i>: {_e(SCOPE_HELP[scope])}" for scope in SCOPE_HELP if scope in scopes)
    return (
        _table("nh-locals", ["", "name", "change", "for Python", "before", "after"], rows)
        + f'<div class="nh-legend" style="font-size:11px;color:#666">{legend}</div>'
    )


def _outcome(view: StepRecord) -> str:
    text = outcome_text(view)
    if text is None:
        return '<div class="nh-outcome"><i>no outcome yet</i></div>'
    return f'<div class="nh-outcome"><b>outcome</b> {_code(text)}</div>'


def _media(prompt: events.PromptRendered | None) -> str:
    """The images and documents sent with the prompt: each one's thumbnail when there is one, and its size."""
    if prompt is None or not prompt.media:
        return ""
    figures = []
    for item in prompt.media:
        picture = ""
        if item.thumbnail is not None:
            source = f"data:image/jpeg;base64,{base64.b64encode(item.thumbnail).decode()}"
            picture = f'<img src="{source}" alt="{_e(item.binding)}" style="{_THUMBNAIL}"><br>'
        caption = f"{_code(f'<{item.binding}>')} {_e(item.placeholder)}"
        figures.append(f'<div class="nh-media-item" style="display:inline-block;vertical-align:top;margin:2px 8px 2px 0">'
                       f'{picture}<span style="font-size:11px">{caption}</span></div>')
    return f'<details open class="nh-media"><summary>Media sent ({len(prompt.media)})</summary>{"".join(figures)}</details>'


def _as_python(view: StepRecord) -> str:
    """The code the step ran, folded; a click on it selects all of it for copying (no script needed)."""
    if not view.finished:
        return ""
    style = _PRE[:-1] + ';user-select:all;-webkit-user-select:all;background:var(--jp-layout-color2,#f5f5f5);padding:4px"'
    return (
        f'<details class="nh-python"><summary>As Python <i style="font-size:11px;color:#666">'
        f"(click the code to select it; <code{_CODE}>%nighthawk code</code> puts it in a new cell)</i></summary>"
        f"<pre{style}>{_e(view.as_python())}</pre></details>"
    )


def _prompt(prompt: events.PromptRendered | None) -> str:
    if prompt is None:
        return '<div class="nh-prompt"><i>no prompt was sent</i></div>'
    return (
        f'<div class="nh-prompt"><b>system</b><pre{_PRE}>{_e(prompt.system_prompt)}</pre>'
        f"<b>user</b><pre{_PRE}>{_e(prompt.user_prompt)}</pre></div>"
    )


def _body(view: StepRecord, *, calls: list[ToolCallRecord] | None = None, first_call: int = 1) -> str:
    """Outcome, tool calls, locals diff, nested steps and prompt of a step (everything below its header)."""
    calls = view.tool_calls if calls is None else calls
    children = list(view.children)
    nested = ""
    if children:
        nested = f"<details open><summary>Nested steps ({_e(counts_text(children))})</summary>{_listing(children)}</details>"
    decisions = "".join(f'<div class="nh-oversight">{_e(decision_text(decision))}</div>' for decision in view.decisions)
    text = text_answers(view)
    if text is not None:  # what the model wrote instead of calling a tool: why a step went nowhere
        decisions = f'<div class="nh-model-text">{_code(text)}</div>{decisions}'
    return (
        f"{_outcome(view)}{decisions}"
        f"<details open><summary>Tool calls ({len(view.tool_calls)})</summary>{_tools(calls, first_call)}</details>"
        f"<details open><summary>Step locals ({len(view.changes)} changed)</summary>{_locals(view.changes, view.unset)}</details>"
        f"{_as_python(view)}"
        f"{_media(view.prompt)}"
        f"{nested}"
        f"<details><summary>Prompt</summary>{_prompt(view.prompt)}</details>"
    )


def step_html(view: StepRecord) -> str:
    """One step in full: header, program, outcome, tool calls and locals (open), nested steps, prompt (folded)."""
    with view._lock:
        return _box(view.status, "nh-step", _header(view) + _body(view))


def _folded(view: StepRecord, number: int) -> str:
    """A step under a one-line summary; open when it did not complete, so problems show at once."""
    with view._lock:
        summary = f"<summary><b>#{number}</b> {_e(compact_text(view))}{_duration(view.duration_s)}</summary>"
        program = f'<pre class="nh-program"{_PRE}>{_e(view.program)}</pre>'
        return _box(view.status, "nh-step", summary + program + _body(view), tag="details", open_=view.status != "completed")


def _listing(views: list[StepRecord]) -> str:
    """The steps `shown_indices` picks, each folded, with a count of the ones left out between them."""
    if len(views) == 1:
        return step_html(views[0])
    parts = []
    previous = -1
    for index in shown_indices([view.status for view in views]):
        if index > previous + 1:
            parts.append(_gap(views[previous + 1 : index]))
        parts.append(_folded(views[index], index + 1))
        previous = index
    return "".join(parts)


def _gap(views: list[StepRecord]) -> str:
    return f'<div class="nh-gap" style="color:#666;margin:2px 0 2px 12px">{_e(gap_text(views))}</div>'


# --- a cell -----------------------------------------------------------------------------------------

def _summary(views: list[StepRecord], *, elapsed: float | None) -> str:
    usage = total_usage(views)
    return (
        f'<div class="nh-summary"><b>Natural steps</b> · <span class="nh-counts">{_e(counts_text(views))}</span>'
        f"{' · ' + _e(usage) if usage else ''}{_duration(elapsed)}</div>"
    )


def _programs(views: list[StepRecord]) -> str:
    listed = programs(views)
    rows = [
        _row([_code(step_id), str(count), f"<pre{_PRE}>{_e(program)}</pre>"])
        for step_id, count, program in listed[:SHOW_PROGRAMS]
    ]
    if len(listed) > SHOW_PROGRAMS:
        rows.append(_row(["…", "", f"<i>{len(listed) - SHOW_PROGRAMS} other blocks</i>"]))
    return _table("nh-programs", ["block", "steps", "program"], rows)


def _overall(views: list[StepRecord]) -> str:
    statuses = {view.status for view in views}
    for status in ("running", "interrupted", "failed", "raised"):
        if status in statuses:
            return status
    return "completed"


def cell_html(views: list[StepRecord]) -> str:
    """A cell's steps: one step in full, or a summary with the chosen steps folded under it."""
    if len(views) == 1:
        return step_html(views[0])
    elapsed = sum(view.duration_s or 0.0 for view in views)
    body = _summary(views, elapsed=elapsed) + _programs(views) + _listing(views)
    return _box(_overall(views), "nh-cell", body)


def live_html(views: list[StepRecord]) -> str:
    """What the live widget shows: the summary, each running step in full (latest tool calls), the last finished.

    Bounded like the static form, and small enough to resend a few times a second.
    """
    if len(views) == 1:
        view = views[0]
        with view._lock:
            calls = view.tool_calls[-_LIVE_CALLS:]
            body = _header(view) + _body(view, calls=calls, first_call=len(view.tool_calls) - len(calls) + 1)
        return _box(view.status, "nh-step", body)
    running = [(index, view) for index, view in enumerate(views) if not view.finished][:2]
    finished = [(index, view) for index, view in enumerate(views) if view.finished][-1:]
    parts = [_summary(views, elapsed=None)]
    for index, view in [*finished, *running]:
        with view._lock:
            calls = view.tool_calls[-_LIVE_CALLS:]
            head = f'<div><b>#{index + 1}</b> {_e(compact_text(view))}</div>'
            parts.append(_box(view.status, "nh-step", head + _tools(calls, len(view.tool_calls) - len(calls) + 1)))
    return _box(_overall(views), "nh-cell", "".join(parts))
