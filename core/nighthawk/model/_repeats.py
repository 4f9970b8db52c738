"""Whether a model goes round in circles: the same call, the same answer, or nothing new, response after response.

A model that repeats itself would otherwise run until the step's request budget (or the context window)
is spent: each round costs a request and grows the prompt. Read from the conversation so far, before each
further request, so the step ends as soon as the pattern shows and no request is spent on it.

A *round* is one model response with the results its tool calls got. A call is the tool's name, its
arguments and its result (a tool return, or what the model was told to fix); a round holds each such call
once, so a response that sends the same call several times (several identical outcomes, say) counts as
one round, as pydantic-ai counts it as one retry. Two rules:

- the same call in `max_repeated_calls` rounds in a row;
- `max_idle_rounds` rounds in a row with nothing new: no call (assignment, tool result or outcome) the step
  had not already seen, a response in plain text included.

Messages are read by their attributes (`kind`, `parts`, `part_kind`), so this module needs no pydantic-ai.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Call", "repeat_problem", "rounds"]

_SHOWN_CHARS = 200


@dataclass(frozen=True)
class Call:
    """One tool call of a round, with what it got back."""

    tool: str
    arguments: str
    """The arguments as canonical JSON (keys sorted), so the same arguments compare equal however sent."""
    result: str

    def label(self) -> str:
        """`nh_eval(expression='x')`, cut to a readable length."""
        try:
            arguments = json.loads(self.arguments)
        except ValueError:
            arguments = self.arguments
        if isinstance(arguments, dict):
            shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
        else:
            shown = repr(arguments)
        return f"{self.tool}({_cut(shown)})"


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _arguments(part: object) -> str:
    arguments = getattr(part, "args", None)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return arguments  # not JSON: compared as sent
    return json.dumps(arguments, sort_keys=True, default=str)


def rounds(messages: Sequence[object]) -> list[frozenset[Call]]:
    """The rounds of a conversation whose last response has been answered, in order.

    A response's results are in the request that follows it. They are matched by call id within that
    request only, in order: some servers number the calls of each response from 0, so an id is not unique
    across a conversation (nor always within a response).

    Args:
        messages: pydantic-ai messages (`ModelRequest` and `ModelResponse`), oldest first.
    """
    found = []
    for index, message in enumerate(messages):
        if getattr(message, "kind", "") != "response":
            continue
        answers: dict[str, list[str]] = {}
        following = messages[index + 1] if index + 1 < len(messages) else None
        for part in getattr(following, "parts", ()):
            call_id = getattr(part, "tool_call_id", None)
            if call_id and getattr(part, "part_kind", "") in ("tool-return", "retry-prompt"):
                answers.setdefault(call_id, []).append(str(part.content))  # type: ignore[attr-defined]
        calls = []
        for part in getattr(message, "parts", ()):
            if getattr(part, "part_kind", "") != "tool-call":
                continue
            results = answers.get(part.tool_call_id) or [""]  # type: ignore[attr-defined]
            calls.append(Call(part.tool_name, _arguments(part), results.pop(0) if len(results) > 1 else results[0]))  # type: ignore[attr-defined]
        found.append(frozenset(calls))
    return found


def repeat_problem(
    messages: Sequence[object], *, max_repeated_calls: int | None, max_idle_rounds: int | None
) -> str | None:
    """Why the step should stop because the model repeats itself, or `None` while it does not.

    Args:
        messages: The conversation so far (see `rounds`).
        max_repeated_calls: Rounds in a row with the same call and result that stop the step; `None`: never.
        max_idle_rounds: Rounds in a row with nothing new that stop the step; `None`: never.
    """
    history = rounds(messages)
    if not history:
        return None
    if max_repeated_calls is not None:
        for call in sorted(history[-1], key=lambda call: (call.tool, call.arguments)):
            streak = 0
            for round_ in reversed(history):
                if call not in round_:
                    break
                streak += 1
            if streak >= max_repeated_calls:
                return (
                    f"the model repeats the same call: {call.label()} got the same result {streak} times in a row "
                    f"({_cut(' '.join(call.result.split()))})"
                )
    if max_idle_rounds is not None:
        seen: set[Call] = set()
        idle: list[frozenset[Call]] = []
        for round_ in history:
            idle = [*idle, round_] if round_ <= seen else []
            seen |= round_
        if len(idle) >= max_idle_rounds:
            repeated = Counter(call for round_ in idle for call in round_).most_common(1)
            which = f" (most often {repeated[0][0].label()})" if repeated else " (plain text only)"
            return (
                f"the model repeats the same call: {len(idle)} responses in a row brought no new assignment, "
                f"tool result or outcome{which}"
            )
    return None
