"""Confirm mode (`%nighthawk confirm on`, `%%natural --confirm`): ask the person before every tool call.

The ask is a tool-call oversight hook (`nighthawk.oversight`). Being sync, it runs on the kernel's main
thread, where the cell runs, so `input()` goes through the kernel's stdin channel: the prompt every
frontend shows (JupyterLab, the classic notebook, VS Code, the terminal), and an interrupt while it waits
stops the cell like any other. A widget would not do: its clicks are only handled once the cell ends.

A return expression is asked for too (shown as `nh_outcome`, `return <expression>`), unless it is a plain
literal, which runs no code. Only `y` or `yes` lets the call run; an empty answer refuses it, and any other
text is passed to the model as the reason (a refused return expression stops the step instead). A frontend
that cannot answer (nbclient and nbval run notebooks without stdin) makes the step stop with
`OversightRejectedError` at its first tool call instead of waiting for ever.
"""

from __future__ import annotations

import ast

from IPython.core.error import StdinNotImplementedError

from nighthawk._evaluate import clip
from nighthawk.secrets._scrubber import current_scrubber
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

__all__ = ["CONFIRM", "PROMPT", "ask", "describe", "use_confirm"]

PROMPT = "Run it? [y/N] "
"""The question under the call shown; only `y` or `yes` runs it."""

_YES = frozenset({"y", "yes"})


def describe(call: ToolCall) -> str:
    """The call as the person reads it: the expression of `nh_eval`, the assignment of `nh_assign`, a user
    tool with its arguments."""
    arguments = call.argument_name_to_value
    match call.tool_name:
        case "nh_eval":
            text = str(arguments.get("expression", ""))
        case "nh_assign":
            text = f"{arguments.get('target_path', '')} = {arguments.get('expression', '')}"
        case "nh_outcome":
            text = f"return {arguments.get('return_expression', '')}"
        case name:
            text = f"{name}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"
    # Model-written text can quote a secret the step holds: masked like everything else the step shows.
    return clip(current_scrubber().scrub(text))


def ask(call: ToolCall) -> ToolCallDecision:
    """Show the call and ask whether to run it (the confirm hook). A return expression that is a literal
    runs no code, so it is let through without asking."""
    if call.tool_name == "nh_outcome" and _is_literal(str(call.argument_name_to_value.get("return_expression", ""))):
        return Accept("a literal runs no code")
    print(f"Nighthawk wants to run ({call.step_id}) {call.tool_name}:\n    {describe(call)}", flush=True)
    try:
        answer = input(PROMPT).strip()
    except StdinNotImplementedError as exc:
        raise OversightRejectedError(
            f"confirm mode could not ask before `{call.tool_name}` ran: this frontend does not answer input "
            "requests (nbclient and nbval run notebooks without stdin), so the call was refused and the step "
            f"stopped; {not_committed()}. Run `%nighthawk confirm off` (or drop `--confirm`) to run unattended"
        ) from exc
    except EOFError:
        answer = ""
    if answer.lower() in _YES:
        return Accept()
    if not answer or answer.lower() in ("n", "no"):
        return Reject("the user did not allow this call")
    return Reject(f"the user did not allow this call and said: {answer}")


def _is_literal(expression: str) -> bool:
    """Whether `expression` is a plain literal (`'done'`, `[1, 2]`), which evaluating runs no code for."""
    try:
        ast.literal_eval(expression.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


CONFIRM = Oversight(inspect_tool_call=ask, name="confirm")
"""The confirm mode's oversight."""


def use_confirm(on: bool) -> None:
    """Turn the kernel-wide confirm mode on or off (asked after any hooks in force; no scope clears it)."""
    if on:
        add_process_oversight(CONFIRM)
    else:
        remove_process_oversight(CONFIRM)
