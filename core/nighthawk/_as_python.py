"""A finished step written out as the plain Python it ran, for a notebook's next cell or a display.

A step changes Python only through its calls of `nh_eval` (an expression run for its effect:
`items.append(x)`) and `nh_assign` (a value stored under a name or an attribute), then ends with an
outcome. Written in order as statements, the calls that succeeded do again what the step did, without a
model: run in the namespace the step started from, they leave its write bindings with the values it
committed. Calls that failed changed nothing and are left out (a comment counts them); the outcome becomes
the code it stands for.

The text comes from the step's events, which `events.emit` has scrubbed: a secret appears as the model saw
it, masked, and since the code is made of the model's own expressions, a value it saw only as a placeholder
stays the name that holds it. No value is ever written into the code.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .events import OutcomeReached

__all__ = ["CallCode", "step_as_python"]

# `await` at the top of a cell runs in IPython and in a natural function's async block alike.
_PARSE_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


@dataclass(frozen=True, kw_only=True)
class CallCode:
    """One tool call of a step, as much of it as its code needs."""

    tool_name: str
    expression: str | None
    """The whole expression of an `nh_eval` or `nh_assign` call; `None` for a user tool, or a value a test
    script handed over without an expression."""
    target: str | None = None
    """Where `nh_assign` stored the value (`name` or `name.attr`)."""
    arguments: str = ""
    """The bounded preview of the arguments, shown for calls that cannot be written as code."""
    succeeded: bool
    """Whether the call finished without an error (a failed call changed nothing the step kept)."""


def _parses(text: str) -> bool:
    try:
        compile(text, "<as-python>", "exec", flags=_PARSE_FLAGS)
    except SyntaxError:
        return False
    return True


def _statement(expression: str, target: str | None = None) -> list[str]:
    """`expression` as a statement, or as the value assigned to `target`.

    An expression the runtime ran is one as it stands; should its text not read as the statement (a form
    the expression grammar takes and the statement grammar does not), it is put in parentheses, which
    changes nothing of its value. Text that still does not parse had a secret masked inside it (the mask
    may take a quote with it): it stays masked, as a comment, for the reader to fill in.
    """
    text = expression.strip()
    head = "" if target is None else f"{target} = "
    # On lines of their own, the parentheses stay out of a trailing comment's way.
    for candidate in (text, f"({text})" if "\n" not in text and "#" not in text else f"(\n{text}\n)"):
        if _parses(head + candidate):
            return [head + candidate]
    return ["# masked, so not runnable as it stands:", *(f"# {line}" for line in (head + text).splitlines())]


def _call_lines(call: CallCode) -> list[str]:
    match call.tool_name:
        case "nh_eval" if call.expression is not None:
            return _statement(call.expression)
        case "nh_assign" if call.expression is not None and call.target is not None:
            return _statement(call.expression, call.target)
        case "nh_eval" | "nh_assign":
            return [f"# {call.tool_name} {_one_line(call.arguments)} (a value given without an expression)"]
        case name:
            return [f"# called the tool {name} with {_one_line(call.arguments)} (not written out as code)"]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _outcome_lines(outcome: OutcomeReached, *, cell: bool) -> list[str]:
    match outcome.kind:
        case "pass":
            return []
        case "return" if outcome.return_expression is not None:
            if cell:  # the cell's last expression is its value, `Out[n]`, as the `return` made it
                return _statement(outcome.return_expression)
            lines = _statement(outcome.return_expression, "result")
            return [*lines[:-1], lines[-1] + "  # the block returns this"]
        case "raise":
            error = outcome.raise_error_type or "ExecutionError"
            lines = [] if outcome.raise_error_type else ["from nighthawk import ExecutionError"]
            return [*lines, f"raise {error}({outcome.raise_message or ''!r})"]
        case "break":  # a comment even in a function's step: the code must run in a cell, outside the loop
            return ["# break: the step left the loop around the block"]
        case "continue":
            return ["# continue: the step went on with the next turn of the loop around the block"]
        case kind:
            return [f"# the step ended with {kind}"]


def step_as_python(
    calls: Sequence[CallCode],
    outcome: OutcomeReached | None,
    *,
    cell: bool,
    failure: str | None = None,
    rewritten: Sequence[str] = (),
) -> str:
    """The Python a step ran: its successful built-in calls in order, then its outcome.

    Args:
        calls: The step's tool calls in the order they started.
        outcome: How the step ended, `None` when it failed or was interrupted.
        cell: The block is a notebook cell: a `return` becomes the cell's last expression (in a function's
            block, the value of `result`). `break` and `continue` are comments either way, so that the code
            runs as a cell of its own.
        failure: Why the step failed or stopped (it committed nothing), said in a closing comment.
        rewritten: Write bindings an oversight hook replaced before the commit (their committed values came
            from the hook, not from this code).

    Returns:
        The code, one statement or comment per line, ending with a newline; only comments when the step
        ran no code.
    """
    failed = sum(1 for call in calls if not call.succeeded)
    lines: list[str] = []
    if failed:
        lines.append(f"# {failed} call{'s' if failed != 1 else ''} that failed left out: {'they' if failed != 1 else 'it'} changed nothing")
    for call in calls:
        if call.succeeded:
            lines.extend(_call_lines(call))
    if outcome is not None and failure is None:
        lines.extend(_outcome_lines(outcome, cell=cell))
    if rewritten:
        lines.append(f"# an oversight hook replaced {', '.join(rewritten)} before the commit: the committed values are its own")
    if failure is not None:
        lines.append(f"# the step {failure}: none of its write bindings was committed")
    if not lines:
        lines.append("# the step ran no code")
    return "\n".join(lines) + "\n"
