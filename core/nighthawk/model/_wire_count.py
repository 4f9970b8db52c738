"""What a step's model client put on the wire: the requests it sent and the HTTP answers it read.

pydantic-ai counts a request once its answer has been read and accepted. The provider saw more: the
answers with an error status the SDK retried by itself (a 500, a 429), and, when a map stops or is
interrupted, the requests in flight whose answers nobody read (the provider answers, and bills, them
all the same). So the HTTP client under a model's SDK client (`httpx`, the one the OpenAI and Anthropic
SDKs use, the user's own `http_client=` included) reports each request it sent whole and each answer it
read to the step running it (`counting_answers`), whichever way the model was given: a `provider:model`
string, a pydantic-ai model object, a custom provider.

A request is counted as sent once its body was written to a connected socket (httpcore's
`send_request_body.complete` trace): one that could not connect (nothing listens) is not counted.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Wire", "count_on_the_wire", "counting_answers"]


@dataclass(kw_only=True)
class Wire:
    """What the model clients of one step did on the wire so far."""

    sent: int = 0
    """Requests written whole to the provider (answered or not)."""
    statuses: list[int] = field(default_factory=list)
    """The HTTP status of each answer read."""

    @property
    def failed(self) -> int:
        """Answers with an error status (not billed)."""
        return sum(status >= 400 for status in self.statuses)


_WIRE: ContextVar[Wire | None] = ContextVar("nighthawk_wire", default=None)


@contextmanager
def counting_answers() -> Iterator[Wire]:
    """What the counted model clients send and read inside the `with` block (in this context and the tasks it
    starts)."""
    wire = Wire()
    token = _WIRE.set(wire)
    try:
        yield wire
    finally:
        _WIRE.reset(token)


def count_on_the_wire(model: Any) -> None:
    """Have the HTTP clients under `model` (a pydantic-ai model, or a fallback's or wrapper's models) report to
    the running step; once per client, however many models share it."""
    seen: list[Any] = [model]
    for one in seen:
        seen.extend(getattr(one, "models", None) or ())
        wrapped = getattr(one, "wrapped", None)
        if wrapped is not None:
            seen.append(wrapped)
        _hook(getattr(getattr(one, "client", None), "_client", None))


def _hook(http: Any) -> None:
    hooks = getattr(http, "event_hooks", None)
    if not isinstance(hooks, dict) or _answered in hooks.get("response", ()):
        return
    http.event_hooks = {
        **hooks,
        "request": [*hooks.get("request", ()), _sending],
        "response": [*hooks.get("response", ()), _answered],
    }


async def _sending(request: Any) -> None:
    wire = _WIRE.get()
    if wire is None:
        return
    traced = request.extensions.get("trace")  # the user's own trace, if any, still sees every event

    async def trace(name: str, info: dict[str, Any]) -> None:  # an async client's trace is awaited
        if name.endswith("send_request_body.complete"):
            wire.sent += 1
        if traced is not None and inspect.isawaitable(answer := traced(name, info)):
            await answer

    request.extensions["trace"] = trace


async def _answered(response: Any) -> None:
    wire = _WIRE.get()
    if wire is not None:
        wire.statuses.append(response.status_code)
