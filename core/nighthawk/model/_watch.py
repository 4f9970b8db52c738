"""What the executor notes about the model's responses in one step.

A `StepWatch` is made for every step and kept on it (`StepContext.watch`) while the step's model runs; the
budget gate (`_budget_model`), which every request of the current step passes, calls it before sending a
request and after the response. It only reads: it never changes a request, a setting or a response, so what a step sends is
the same with it as without (replay stores stay valid). It notes

- when each request was sent, so a timeout can say how long the model had been generating;
- the responses without a tool call and the model's last text, which a step that fails because the model
  never ended it properly reports (a `ModelText` event for displays, a sentence for the error);
- whether the model repeats itself (`_repeats`), checked before each further request: the step ends with
  an `ExecutionError` instead of spending its request budget.

It is read from the model wrapper rather than hooked into pydantic-ai's agent run as a capability: a
capability makes every run set up its event-stream wrapping, a cost paid on every step for four notes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .. import events
from ..errors import ExecutionError, not_committed
from ..step._evaluate import clip
from ._repeats import repeat_problem

__all__ = ["LOCAL_MODELS_DOC", "TEXT_CHARS", "StepWatch"]

TEXT_CHARS = 500
"""Characters of the model's text an error or an event quotes (the start; the rest is counted)."""

LOCAL_MODELS_DOC = "docs/local-models.md"
"""Where the docs say which local servers and chat templates let a model call tools."""


class StepWatch:
    """Notes on one step's model responses; one instance per step."""

    def __init__(self, invocation_id: str, *, max_repeated_calls: int | None, max_idle_rounds: int | None) -> None:
        self.invocation_id = invocation_id
        self.max_repeated_calls = max_repeated_calls
        self.max_idle_rounds = max_idle_rounds
        self.responses = 0
        """Responses received."""
        self.without_tool_call = 0
        """Responses that called no tool (plain text, or nothing at all)."""
        self.last_text: str | None = None
        """The model's latest non-blank text, clipped."""
        self.sent_at: float | None = None
        """`time.monotonic()` when the latest request was sent."""
        self.first_request: tuple[Any, Any, Any] | None = None
        """The messages, settings and parameters of the step's first request, as the agent sent them."""

    def before_request(self, messages: Sequence[Any]) -> None:
        """Refuse a further request when the conversation so far shows the model repeating itself."""
        problem = repeat_problem(
            messages, max_repeated_calls=self.max_repeated_calls, max_idle_rounds=self.max_idle_rounds
        )
        if problem is not None:
            raise ExecutionError(
                f"{problem}. The step was stopped before another request; {not_committed()}. Reword the "
                "program or try another model (`max_repeated_calls` and `max_idle_rounds` of "
                "`StepExecutorConfiguration` set how much repetition a step allows)"
            )
        self.sent_at = time.monotonic()

    def after_response(self, response: Any) -> None:
        self.responses += 1
        parts = getattr(response, "parts", ())
        text = "".join(part.content for part in parts if getattr(part, "part_kind", "") == "text").strip()
        if text:
            self.last_text = clip(text, TEXT_CHARS)
        if not any(getattr(part, "part_kind", "") == "tool-call" for part in parts):
            self.without_tool_call += 1
            if events.listening():
                events.emit(
                    events.ModelText(invocation_id=self.invocation_id, text=clip(text, TEXT_CHARS), count=self.without_tool_call)
                )

    def waited_s(self) -> float | None:
        """Seconds since the latest request was sent, or `None` before any."""
        return None if self.sent_at is None else time.monotonic() - self.sent_at

    def explain_unfinished(self, message: str) -> str:
        """`message` (a step the model did not end properly) with what the model said instead, if anything."""
        if not self.without_tool_call and self.last_text is None:
            return message
        note = f"{self.without_tool_call} of {self.responses} model responses had no tool call"
        note += f"; the model's last text: {self.last_text!r}." if self.last_text else "."
        if self.responses and self.without_tool_call == self.responses:
            note += (
                " The model never called a tool although tools were offered: the server or its chat "
                f"template may not support tool calls (see {LOCAL_MODELS_DOC})."
            )
        return f"{message.rstrip('. ')}. {note}"
