"""The plain-text form of step displays (terminal IPython, `text` mode, and `text/plain` everywhere).

Deterministic on purpose: no durations, ids or addresses, so nbval can compare it. The phrases built here
(outcome, usage, what happened to a name) are shared with the HTML form in `_html`.
"""

from __future__ import annotations

from collections import Counter
from typing import assert_never

from nighthawk import events
from nighthawk.budget import UsageTotals
from nighthawk.errors import not_committed

from ._records import STEP_STATUSES, StepRecord, ToolCallRecord, shown_indices

__all__ = [
    "cell_lines",
    "change_scope",
    "compact_text",
    "cost_text",
    "counts_text",
    "decision_text",
    "gap_text",
    "outcome_text",
    "programs",
    "step_lines",
    "total_usage",
    "step_usage",
    "text_answers",
    "usage_text",
]

SHOW_PROGRAMS = 5
"""Distinct blocks listed in a cell summary (a cell rarely runs more; beyond that they are counted)."""

CHANGE_MARK = {"added": "+", "changed": "~", "removed": "-"}

SCOPE_HELP = {
    "committed": "a write binding, written to Python when the step succeeded",
    "changed in place": "the same object was modified, so the change is already visible in Python",
    "step only": "scratch that existed only inside the step",
}
"""What each label of the step-locals diff means (the HTML shows it as a legend)."""


def change_scope(change: events.LocalsChange) -> str:
    """What happened to a name for Python: `committed`, `changed in place` or `step only`."""
    if change.committed:
        return "committed"
    if change.in_place:
        return "changed in place"
    return "step only"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def usage_text(totals: UsageTotals) -> str:
    """`2 requests · 340 in (300 cached) / 25 out tokens · $0.0012`."""
    return (
        f"{_plural(totals.requests, 'request')} · {totals.input_tokens}{cached_text(totals)} in / "
        f"{totals.output_tokens} out tokens · {cost_text(totals)}"
    )


def cached_text(totals: UsageTotals) -> str:
    """` (300 cached)` when some input tokens came from the provider's prompt cache, else nothing."""
    return f" ({totals.cache_read_tokens} cached)" if totals.cache_read_tokens else ""


def cost_text(totals: UsageTotals) -> str:
    """Money of some requests: `$0.0012`, `unpriced` when no price is known, or a lower bound when some are.

    Requests the provider answered with an error are not billed: they cost 0 whatever the model, so they
    neither make a cost unknown nor count among the unpriced ones (as in the batch map's progress line)."""
    if not totals.requests:
        return "$0"
    if totals.cost_usd is not None:
        return f"${totals.cost_usd:.4f}"
    if not totals.priced_cost_usd:
        return "unpriced"
    return f"≥ ${totals.priced_cost_usd:.4f} ({_plural(totals.unpriced_requests, 'unpriced request')})"


def _summed(usages: list[events.UsageReported]) -> UsageTotals:
    totals = UsageTotals()
    for usage in usages:
        totals.add(usage)
    return totals


def step_usage(view: StepRecord) -> str | None:
    """Requests, tokens and cost of one step, or `None` before it reported any."""
    usage = view.usage
    if usage is None:
        return None
    return usage_text(_summed([usage]))


def outcome_text(view: StepRecord) -> str | None:
    """The outcome or failure of a step in one line, or `None` while it has neither."""
    if view.failure is not None:
        if view.failure.interrupted:
            return f"interrupted: {not_committed()}"
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


def counts_text(views: list[StepRecord]) -> str:
    """`300 steps · 297 completed · 3 raised`, statuses in a fixed order."""
    counts = Counter(view.status for view in views)
    parts = [_plural(len(views), "step")]
    parts += [f"{counts[status]} {status}" for status in (*STEP_STATUSES[1:], STEP_STATUSES[0]) if counts[status]]
    return " · ".join(parts)


def total_usage(views: list[StepRecord]) -> str | None:
    """Requests, tokens and cost of all `views` (their nested steps are counted by the model calls they made)."""
    reported = [view.usage for view in views if view.usage is not None]
    if not reported:
        return None
    return usage_text(_summed(reported))


def compact_text(view: StepRecord) -> str:
    """One line per step: where it is, its status, its outcome and its usage."""
    parts = [view.step_id, view.status]
    if view.outcome is not None and view.outcome.kind == "return" and view.failure is None:
        parts.append(f"return {_short(view.outcome.return_value, _COMPACT_OUTCOME)}")  # the expression is in the step
    elif (outcome := outcome_text(view)) is not None:
        parts.append(_short(outcome, _COMPACT_OUTCOME))
    # What reached Python, so a row of steps reads as a column of results.
    written = [f"{change.name} = {_short(change.after)}" for change in view.changes if change_scope(change) != "step only"]
    if written:
        parts.append(", ".join(written[:_COMPACT_CHANGES]) + (" …" if len(written) > _COMPACT_CHANGES else ""))
    usage = step_usage(view)
    if usage is not None:
        parts.append(usage)
    return " · ".join(parts)


_COMPACT_CHANGES = 2
_COMPACT_VALUE = 40
_COMPACT_OUTCOME = 100
_CALL_VALUE = 300
"""Characters of a tool call's arguments and of its result a step's text shows (a terminal line or two)."""


def _short(value: str | None, limit: int = _COMPACT_VALUE) -> str:
    """`value` on one line, cut to `limit` characters (the full value is in the step's own display)."""
    text = "" if value is None else " ".join(value.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call_text(index: int, call: ToolCallRecord) -> str:
    head = f"{index}. {call.tool_name} {_short(call.arguments, _CALL_VALUE)}".rstrip()
    if call.error_kind is not None:
        return f"{head} -> error {call.error_kind}: {_short(call.error_message, _CALL_VALUE)}"
    if call.duration_s is None:
        return f"{head} -> ({call.cut or 'running'})"
    return f"{head} -> {_short(call.result, _CALL_VALUE)}"


def _change_text(change: events.LocalsChange) -> str:
    match change.change:
        case "added":
            values = f"{change.after}"
        case "removed":
            values = f"{change.before}"
        case "changed":
            values = f"{change.before} -> {change.after}"
        case other:
            assert_never(other)
    return f"{CHANGE_MARK[change.change]} {change.name} = {values} ({change_scope(change)})"


def text_answers(view: StepRecord) -> str | None:
    """`model text (2 responses without a tool call), last: '…'`, or `None` when the model always called tools."""
    if not view.text_answers:
        return None
    count = _plural(view.text_answers, "response")
    last = repr(view.last_text) if view.last_text else "(empty)"
    return f"model text ({count} without a tool call), last: {last}"


def decision_text(decision: events.OversightDecision) -> str:
    """`oversight: read_only rejected nh_eval (why)` for a rejection or a rewrite shown under a step."""
    subject = decision.tool_name or ("the commit" if not decision.names else ", ".join(decision.names))
    reason = f" ({decision.reason})" if decision.reason else ""
    return f"oversight: {decision.oversight} {decision.decision} {subject}{reason}"


def step_lines(view: StepRecord, indent: str) -> list[str]:
    """The full text of one step: header, program, tool calls, locals diff, outcome, nested steps."""
    header = [f"Natural step {view.step_id}", view.status, f"model {view.model}"]
    usage = step_usage(view)
    if usage is not None:
        header.append(usage)
    lines = [indent + " · ".join(header)]
    inner = indent + "  "
    program = view.program.splitlines() or [""]
    lines.append(f"{inner}program: {program[0]}")
    lines.extend(f"{inner}         {line}" for line in program[1:])
    if view.tool_calls:
        lines.append(f"{inner}tool calls ({len(view.tool_calls)}):")
        lines.extend(f"{inner}  {_call_text(i, call)}" for i, call in enumerate(view.tool_calls, 1))
    text = text_answers(view)
    if text is not None:
        lines.append(f"{inner}{text}")
    lines.extend(f"{inner}{decision_text(decision)}" for decision in view.decisions)
    if view.changes:
        lines.append(f"{inner}locals:")
        lines.extend(f"{inner}  {_change_text(change)}" for change in view.changes)
    if view.unset:
        lines.append(f"{inner}left unset: {', '.join(view.unset)}")
    if view.prompt is not None and view.prompt.media:
        lines.append(f"{inner}media sent ({len(view.prompt.media)}):")
        lines.extend(f"{inner}  <{item.binding}> {item.placeholder}" for item in view.prompt.media)
    outcome = outcome_text(view)
    if outcome is not None:
        lines.append(f"{inner}outcome: {outcome}")
    if view.finished:
        lines.append(f"{inner}as Python:")
        lines.extend(f"{inner}  {line}" for line in view.as_python().splitlines())
    children = list(view.children)
    if len(children) == 1:
        lines.append(f"{inner}nested:")
        lines.extend(step_lines(children[0], inner + "  "))
    elif children:
        lines.append(f"{inner}nested: {counts_text(children)}")
        lines.extend(_listed(children, inner + "  "))
    return lines


def gap_text(views: list[StepRecord]) -> str:
    """`… 290 more steps not shown (288 completed, 2 raised)` for the steps left out of a listing."""
    counts = Counter(view.status for view in views)
    detail = ", ".join(f"{counts[status]} {status}" for status in (*STEP_STATUSES[1:], STEP_STATUSES[0]) if counts[status])
    return f"… {_plural(len(views), 'more step')} not shown ({detail})"


def _listed(views: list[StepRecord], indent: str) -> list[str]:
    """Compact lines for the steps `shown_indices` picks, with a count of the ones left out between."""
    lines: list[str] = []
    previous = -1
    for index in shown_indices([view.status for view in views]):
        if index > previous + 1:
            lines.append(indent + gap_text(views[previous + 1 : index]))
        lines.append(f"{indent}#{index + 1} {compact_text(views[index])}")
        previous = index
    return lines


def programs(views: list[StepRecord]) -> list[tuple[str, int, str]]:
    """Each distinct block the steps ran: step id, how many steps ran it, its program (in first-seen order).

    A block is told apart by its program as well as its id: functions defined in two notebook cells are all
    in `__main__`, so two of their blocks on the same line of their cells share an id."""
    seen: dict[tuple[str, str], int] = {}
    for view in views:
        key = (view.step_id, view.program)
        seen[key] = seen.get(key, 0) + 1
    return [(step_id, count, program) for (step_id, program), count in seen.items()]


def cell_lines(views: list[StepRecord]) -> list[str]:
    """The text of a cell's steps: one step in full, or a bounded summary of many."""
    if len(views) == 1:
        return step_lines(views[0], indent="")
    summary = ["Natural steps", counts_text(views)]
    usage = total_usage(views)
    if usage is not None:
        summary.append(usage)
    lines = [" · ".join(summary)]
    listed = programs(views)
    for step_id, count, program in listed[:SHOW_PROGRAMS]:
        first = (program.splitlines() or [""])[0]
        lines.append(f"  {step_id} ({_plural(count, 'step')}): {first}")
    if len(listed) > SHOW_PROGRAMS:
        lines.append(f"  … {_plural(len(listed) - SHOW_PROGRAMS, 'other block')}")
    lines.extend(_listed(views, "  "))
    return lines
