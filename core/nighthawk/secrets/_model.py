"""The model-bound choke point: a pydantic-ai wrapper that scrubs every request before the real model sees it.

The executor wraps whatever model it resolves (a provider model, a `FunctionModel`, a `ReplayModel`), so the
user data of a request (the user prompt, every tool return, every retry and correction prompt, and the text
and tool arguments of earlier responses) is scrubbed by the step's `SecretScrubber` on the way out,
whichever part of Nighthawk or pydantic-ai wrote it. A replay store behind it therefore never receives a
secret value either. The protocol is never rewritten: instructions, system prompt parts, tool names and
the tool and outcome schemas go out as they are.

Responses come back untouched: the model only ever saw scrubbed text, and tools must run what it wrote.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import BinaryContent, ModelMessage, ModelResponse, SystemPromptPart
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from ._scrubber import SecretScrubber, current_scrubber

__all__ = ["SecretScrubbingModel"]

# The fields of a message part that carry user data; everything else of a part is protocol.
_USER_DATA_FIELDS = ("content", "args")


def _scrubbed_value(value: Any, scrubber: SecretScrubber) -> Any:
    """`value` scrubbed; in multimodal content (a list), binary media pass as they are: bytes are no text."""
    if not isinstance(value, list):
        return scrubber.scrub_data(value)
    items = [item if isinstance(item, BinaryContent) else scrubber.scrub_data(item) for item in value]
    return items if any(a is not b for a, b in zip(items, value, strict=True)) else value


def _scrubbed_part(part: Any, scrubber: SecretScrubber) -> Any:
    if isinstance(part, SystemPromptPart):
        return part
    changes = {}
    for name in _USER_DATA_FIELDS:
        value = getattr(part, name, None)
        if value is not None and (scrubbed := _scrubbed_value(value, scrubber)) is not value:
            changes[name] = scrubbed
    if not changes:
        return part
    copied = copy.copy(part)  # keeps fields `dataclasses.replace` could not pass (`init=False`)
    for name, value in changes.items():
        object.__setattr__(copied, name, value)
    return copied


def _scrubbed_message(message: ModelMessage, scrubber: SecretScrubber) -> ModelMessage:
    parts = [_scrubbed_part(part, scrubber) for part in message.parts]
    if all(a is b for a, b in zip(parts, message.parts, strict=True)):
        return message
    copied = copy.copy(message)
    object.__setattr__(copied, "parts", parts)
    return copied


def _scrubbed(messages: list[ModelMessage]) -> list[ModelMessage]:
    scrubber = current_scrubber()
    return [_scrubbed_message(message, scrubber) for message in messages]


class SecretScrubbingModel(WrapperModel):
    """Wraps a model so that nothing it is sent holds a secret value of the current step."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        messages = _scrubbed(messages)
        return await self.wrapped.request(messages, model_settings, model_request_parameters)

    async def count_tokens(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> RequestUsage:
        messages = _scrubbed(messages)
        return await self.wrapped.count_tokens(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        messages = _scrubbed(messages)
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
