"""Confirm mode (`%nighthawk confirm on`, `%%natural --confirm`): ask the person before every tool call.

The ask is a tool-call oversight hook (`nighthawk.oversight`). Being sync, it runs on the kernel's main
thread, where the cell runs, so `input()` goes through the kernel's stdin channel: the prompt every
frontend shows (JupyterLab, the classic notebook, VS Code, the terminal), and an interrupt while it waits
stops the cell like any other. A widget would not do: its clicks are only handled once the cell ends.

The call is shown as it will run: names, calls and operators as the model wrote them, with secrets masked
only inside string literals (`nighthawk.secrets._code`), characters that would move or hide printed text
shown as `<U+XXXX>`, names in lookalike letters as Python reads them, with a note (`nighthawk.transcript._lookalikes`),
and long code shown whole, a page at a time, before the question.

A return expression is asked for too (shown as `nh_outcome`, `return <expression>`), unless it is a plain
literal that names nothing (`set()` calls whatever the step bound to `set`), which runs no code. Only `y` or `yes` lets the call run; an empty answer refuses it, and any other
text is passed to the model as the reason (a refused return expression stops the step instead). A frontend
that cannot answer (nbclient and nbval run notebooks without stdin) makes the step stop with
`OversightRejectedError` at its first tool call instead of waiting for ever.
"""

from __future__ import annotations

import ast

from IPython.core.error import StdinNotImplementedError

from nighthawk.errors import OversightRejectedError, not_committed
from nighthawk.oversight import (
    Accept,
    Oversight,
    Reject,
    ToolCall,
    ToolCallDecision,
    add_process_oversight,
    remove_process_oversight,
)
from nighthawk.secrets._code import mask_code_strings
from nighthawk.secrets._scrubber import current_scrubber
from nighthawk.transcript._lookalikes import names_as_read
from nighthawk.transcript._unseen import visible_controls

__all__ = ["CONFIRM", "PAGE_LINES", "PROMPT", "ask", "describe", "pages", "use_confirm"]

PROMPT = "Run it? [y/N] "
"""The question under the call shown; only `y` or `yes` runs it."""

_YES = frozenset({"y", "yes"})
_NO = frozenset({"n", "no"})

PAGE_LINES = 40
"""Lines of code shown before asking for the next page."""
_FOLD_COLUMNS = 160
"""A longer line is folded onto the next lines (marked `↪`), so no code runs off the side of a prompt."""


def describe(call: ToolCall) -> str:
    """The call as the person reads it: the expression of `nh_eval`, the assignment of `nh_assign`, a user
    tool with its arguments; whole, with secrets masked only inside its string literals, and each name in
    lookalike letters written as Python reads it (`_lookalike_notes` says which)."""
    return visible_controls(names_as_read(_written(call))[0])


def _lookalike_notes(call: ToolCall) -> tuple[str, ...]:
    """What `describe` changed in names that read as other names: one note each."""
    return names_as_read(_written(call))[1]


def _written(call: ToolCall) -> str:
    arguments = call.argument_name_to_value
    scrubber = current_scrubber()

    def code(text: object) -> str:
        # Model-written text can quote a secret the step holds: masked, but never past a literal's quotes.
        return mask_code_strings(str(text), scrubber.scrub, scrubber.redaction.placeholder)

    match call.tool_name:
        case "nh_eval":
            return code(arguments.get("expression", ""))
        case "nh_assign":
            return f"{arguments.get('target_path', '')} = {code(arguments.get('expression', ''))}"
        case "nh_outcome":
            return f"return {code(arguments.get('return_expression', ''))}"
        case name:
            return f"{name}({', '.join(f'{key}={code(repr(value))}' for key, value in arguments.items())})"


def pages(text: str) -> list[str]:
    """`text` as shown: each line indented, lines past the fold width folded, in pages of `PAGE_LINES`."""
    lines = []
    for line in text.split("\n"):
        chunks = [line[at : at + _FOLD_COLUMNS] for at in range(0, len(line), _FOLD_COLUMNS)] or [""]
        lines += [f"    {chunks[0]}", *(f"  ↪ {chunk}" for chunk in chunks[1:])]
    return ["\n".join(lines[at : at + PAGE_LINES]) for at in range(0, len(lines), PAGE_LINES)]


def ask(call: ToolCall) -> ToolCallDecision:
    """Show the call and ask whether to run it (the confirm hook). A return expression that is a literal
    runs no code, so it is let through without asking."""
    if call.tool_name == "nh_outcome" and _is_literal(str(call.argument_name_to_value.get("return_expression", ""))):
        return Accept("a literal runs no code")
    shown = pages(describe(call))
    size = f" ({len(shown)} pages)" if len(shown) > 1 else ""
    print(f"Nighthawk wants to run ({call.step_id}) {call.tool_name}{size}:", flush=True)
    for number, page in enumerate(shown, start=1):
        print(page, flush=True)
        if number < len(shown):
            answer = _answer(call, f"-- page {number} of {len(shown)}: Enter shows more, n refuses -- ")
            if answer and answer.lower() not in _YES:
                return _refusal(answer)
    placeholder = current_scrubber().redaction.placeholder
    if any(placeholder in page for page in shown):
        print(f"    ({placeholder} stands for text inside a string literal that looks like a secret)", flush=True)
    for note in _lookalike_notes(call):
        print(f"    (a name in lookalike letters: {visible_controls(note)})", flush=True)
    answer = _answer(call, PROMPT)
    return Accept() if answer.lower() in _YES else _refusal(answer)


def _answer(call: ToolCall, prompt: str) -> str:
    try:
        return input(prompt).strip()
    except StdinNotImplementedError as exc:
        raise OversightRejectedError(
            f"confirm mode could not ask before `{call.tool_name}` ran: this frontend does not answer input "
            "requests (nbclient and nbval run notebooks without stdin), so the call was refused and the step "
            f"stopped; {not_committed()}. Run `%nighthawk confirm off` (or drop `--confirm`) to run unattended"
        ) from exc
    except EOFError:
        return ""


def _refusal(answer: str) -> Reject:
    if not answer or answer.lower() in _NO:
        return Reject("the user did not allow this call")
    return Reject(f"the user did not allow this call and said: {answer}")


def _is_literal(expression: str) -> bool:
    """Whether `expression` is a plain literal (`'done'`, `[1, 2]`), which evaluating runs no code for.
    `ast.literal_eval` also takes `set()`, a call of whatever the name `set` holds where it is evaluated (the
    step may have bound it to anything): a literal here names nothing."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return not any(isinstance(node, ast.Name) for node in ast.walk(tree))


CONFIRM = Oversight(inspect_tool_call=ask, name="confirm")
"""The confirm mode's oversight."""


def use_confirm(on: bool) -> None:
    """Turn the kernel-wide confirm mode on or off (asked after any hooks in force; no scope clears it)."""
    if on:
        add_process_oversight(CONFIRM)
    else:
        remove_process_oversight(CONFIRM)
