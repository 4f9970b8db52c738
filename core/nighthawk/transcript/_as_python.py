"""A finished step written out as the plain Python it ran, for a notebook's next cell or a display.

A step changes Python only through its calls of `nh_eval` (an expression run for its effect:
`items.append(x)`) and `nh_assign` (a value stored under a name or an attribute), then ends with an
outcome. Written in order as statements, the calls that succeeded do again what the step did, without a
model: run in the namespace the step started from, they leave its write bindings with the values it
committed. Calls that failed are left out (a comment counts them); the outcome becomes the code it stands
for. A natural function's step started from the function's locals, which the notebook lacks: its code
first binds those it reads (`xs = data  # the argument`, see `_local_sources`), so it runs in the notebook.

The text comes from the step's events, which `events.emit` has scrubbed: since the code is made of the
model's own expressions, a value it saw only as a placeholder stays the name that holds it, and an
expression in which a secret was masked is a comment, never code that would run with the placeholder. No
value is written into the code but a function's argument that nothing in the notebook names and that is a
short literal of builtin types (`threshold = 100`), scrubbed like the rest of the event.

The user reads the code before running it, so it shows what it does: a character that would hide or
reorder text (a bidi override, a zero-width space, a terminal escape) and a string over several lines
(whose lines could pass for comments) are written the way `ast.unparse` writes them, escaped on one line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..secrets import ContextRedaction
from ._unseen import unseen

if TYPE_CHECKING:
    from ..events import LocalSource, OutcomeReached

__all__ = ["CallCode", "step_as_python"]

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
    """Whether the call finished without an error."""
    awaited: bool = False
    """The runtime awaited the value the expression gave (`fetch()` of an `async def`): the code awaits it."""


def _shown(text: str) -> str:
    """`text` with each character a reader would not see written as its escape (`\\u202e`), for a comment."""
    return "".join(c.encode("unicode_escape").decode("ascii") if unseen(c) else c for c in text)


def _misleading(text: str) -> bool:
    """Whether the text, shown as it stands, could read as other code than it is: it holds a character a
    reader does not see, or a string over several lines (whose lines may look like comments or statements)."""
    if any(unseen(character) for character in text):
        return True
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return any(token.start[0] != token.end[0] for token in tokens)


def _reads_as(source: str, value: str) -> bool:
    """Whether `source` is one statement whose expression is the one dumped in `value` (and nothing else)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return len(body) == 1 and isinstance(body[0], ast.Expr | ast.Assign) and ast.dump(body[0].value) == value


def _comment(why: str, text: str) -> list[str]:
    return [f"# {why}:", *(f"# {_shown(line)}" for line in text.split("\n"))]


def _statement(expression: str, target: str | None, placeholder: str, *, awaited: bool = False) -> list[str]:
    """`expression` as a statement, or as the value assigned to `target`, that does what the runtime ran.

    Text a reader could misread (see `_misleading`) is written the way `ast.unparse` writes it: on one line,
    strings with escapes, without the model's comments. An expression that does not read as the statement
    as it stands gets parentheses; one whose value the runtime awaited gets `await`. A masked secret keeps
    the line from running: as a comment, it shows where the value goes (the mask may even have taken a
    quote with it, leaving text that no longer parses).
    """
    text = expression.strip()
    head = "" if target is None else f"{target} = "
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return _comment("masked, so not runnable as it stands", head + text)
    if placeholder in text:
        return _comment(f"a secret in it is masked ({placeholder}): put it back to run it", head + text)
    if _misleading(text):
        text = ast.unparse(tree)
        if any(unseen(character) for character in text):  # in a name, which no escape can write
            return _comment("not runnable as shown: a name in it holds a character that shows as nothing", head + text)
    value = ast.dump(ast.Await(value=tree.body) if awaited else tree.body)
    # On lines of their own, the parentheses stay out of a trailing comment's way.
    wrapped = f"({text})" if "\n" not in text and "#" not in text else f"(\n{text}\n)"
    for candidate in (text, wrapped):
        if awaited:
            candidate = f"await {candidate}"
        if _reads_as(head + candidate, value):
            return [head + candidate]
    return _comment("not runnable as a statement", head + text)


def _call_lines(call: CallCode, placeholder: str) -> list[str]:
    match call.tool_name:
        case "nh_eval" if call.expression is not None:
            return _statement(call.expression, None, placeholder, awaited=call.awaited)
        case "nh_assign" if call.expression is not None and call.target is not None:
            return _statement(call.expression, call.target, placeholder, awaited=call.awaited)
        case "nh_eval" | "nh_assign":
            return [f"# {call.tool_name} {_one_line(call.arguments)} (a value given without an expression)"]
        case name:
            return [f"# called the tool {_shown(name)} with {_one_line(call.arguments)} (not written out as code)"]


def _one_line(text: str) -> str:
    return _shown(" ".join(text.split()))


def _free_name(lines: list[str]) -> str:
    """`result`, or `result_2`, ... when the code uses that name already (a binding called `result`)."""
    used = set(re.findall(r"\w+", "\n".join(lines)))
    return next(name for name in ("result", *(f"result_{n}" for n in range(2, len(used) + 3))) if name not in used)


def _outcome_lines(
    outcome: OutcomeReached, *, cell: bool, code: list[str], assigned: bool, placeholder: str
) -> list[str]:
    match outcome.kind:
        case "pass":
            return []
        case "return" if outcome.return_expression is not None:
            if cell:  # the cell's last expression is its value, `Out[n]`, as the `return` made it
                return _statement(outcome.return_expression, None, placeholder, awaited=outcome.return_awaited)
            name = _free_name([*code, outcome.return_expression])
            lines = _statement(outcome.return_expression, name, placeholder, awaited=outcome.return_awaited)
            return [*lines[:-1], lines[-1] + "  # the block returns this"]
        case "raise":
            error = outcome.raise_error_type or "ExecutionError"
            lines = [] if outcome.raise_error_type else ["from nighthawk import ExecutionError"]
            if assigned:  # run, the code above does assign them
                lines.append("# the step raised here, so none of its write bindings was committed")
            return [*lines, f"raise {error}({outcome.raise_message or ''!r})"]
        case "break":  # a comment even in a function's step: the code must run in a cell, outside the loop
            return ["# break: the step left the loop around the block"]
        case "continue":
            return ["# continue: the step went on with the next turn of the loop around the block"]
        case kind:
            return [f"# the step ended with {kind}"]


def _read_first(code: str) -> set[str]:
    """The names `code` reads before it assigns them, statement by statement (every word, if it does not parse)."""
    try:
        tree = compile(code, "<step>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:
        return set(re.findall(r"\w+", code))
    assigned: set[str] = set()
    needed: set[str] = set()
    for statement in tree.body:
        names = [node for node in ast.walk(statement) if isinstance(node, ast.Name)]
        read = {node.id for node in names if isinstance(node.ctx, ast.Load)}
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            read.add(statement.target.id)  # `total += 1` reads `total` first
        needed |= read - assigned
        assigned |= {node.id for node in names if isinstance(node.ctx, ast.Store)}
    return needed


def _binding_lines(sources: Sequence[LocalSource], code: list[str], placeholder: str) -> list[str]:
    """Lines binding the function's locals that `code` reads before assigning them: those the notebook's
    names hold first (they read the notebook), then the literals, then what no line can bind."""
    needed = _read_first("\n".join(code))
    bound = [source for source in sources if source.name in needed and source.expression != source.name]
    named = [source for source in bound if source.source == "name"]
    lines: list[str] = []
    if any(source.expression in {other.name for other in named} for source in named):
        # `f(y, x)` binds `x = y` and `y = x`: one by one, the second would read the value the first set.
        targets = ", ".join(source.name for source in named)
        together = _statement(", ".join(str(source.expression) for source in named), targets, placeholder)
        lines.extend([*together[:-1], f"{together[-1]}  # the arguments, read together"])
        named = []
    for source in [*named, *(source for source in bound if source.source != "name")]:
        what = "the argument" if source.parameter else "set in the function before the block"
        if source.expression is None:
            lines.append(
                f"# {source.name}: {what}, a {_shown(source.type_name)} no name in the notebook holds: "
                f"bind {source.name} to it to run this"
            )
            continue
        line = _statement(source.expression, source.name, placeholder)
        lines.extend([*line[:-1], f"{line[-1]}  # {what}"])
    return lines


def step_as_python(
    calls: Sequence[CallCode],
    outcome: OutcomeReached | None,
    *,
    cell: bool,
    failure: str | None = None,
    rewritten: Sequence[str] = (),
    placeholder: str = ContextRedaction.placeholder,
    local_sources: Sequence[LocalSource] = (),
    isolated: bool = False,
) -> str:
    """The Python a step ran: its successful built-in calls in order, then its outcome.

    Args:
        calls: The step's tool calls in the order they started.
        outcome: How the step ended, `None` when it failed or was interrupted.
        cell: The block is a notebook cell: a `return` becomes the cell's last expression (in a function's
            block, the value of `result`, or of another name when the code uses `result`). `break` and
            `continue` are comments either way, so that the code runs as a cell of its own.
        failure: Why the step failed or stopped (it committed nothing), said in a closing comment.
        rewritten: Write bindings an oversight hook replaced before the commit (their committed values came
            from the hook, not from this code).
        placeholder: The text that replaced secrets in the events (`ContextRedaction.placeholder`): a line
            holding it is a comment, not code that would run with the placeholder as the value.
        local_sources: A natural function's locals when its block started: those the code reads before
            assigning them are bound first (`xs = data  # the argument`), or a comment says what to bind.
        isolated: The step ran its code in a walled child (`nighthawk.oversight.isolated`): run here, the
            code would also change in place what the step changed only in the child's copy.

    Returns:
        The code, one statement or comment per line, ending with a newline; only comments when the step
        ran no code. No character in it hides or reorders what a reader sees (see `_HIDDEN`).
    """
    failed = sum(1 for call in calls if not call.succeeded)
    lines: list[str] = []
    if isolated:
        lines.append(
            "# ran isolated, in a child process: what it changed in place (items.append, a DataFrame edited in place) "
            "changed the child's copy only; the write bindings and the return value came back"
        )
    if failed:
        # The runtime undoes nothing a failed call did to an object before its error (`xs.append(1) or 1/0`).
        lines.append(f"# left out: {failed} call{'s' if failed != 1 else ''} that failed (what a failed call changed before its error stays changed)")
    for call in calls:
        if call.succeeded:
            lines.extend(_call_lines(call, placeholder))
    if outcome is not None and failure is None:
        # Names a `raise` leaves uncommitted: those of `nh_assign` calls, and of `:=` (a rough test, on the text).
        assigned = any(call.succeeded and (call.tool_name == "nh_assign" or ":=" in (call.expression or "")) for call in calls)
        lines.extend(_outcome_lines(outcome, cell=cell, code=lines, assigned=assigned, placeholder=placeholder))
    if rewritten:
        lines.append(f"# an oversight hook replaced {_shown(', '.join(rewritten))} before the commit: the committed values are its own")
    if failure is not None:
        lines.append(f"# the step {_shown(failure)}: none of its write bindings was committed")
    at = 1 if isolated else 0  # the bindings go after the isolation note, which is about the whole code
    lines[at:at] = _binding_lines(local_sources, lines[at:], placeholder)
    if not lines:
        lines.append("# the step ran no code")
    return "\n".join(lines) + "\n"
