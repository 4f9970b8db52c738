"""The model-bound choke point: a pydantic-ai wrapper that scrubs every request before the real model sees it.

The executor wraps whatever model it resolves (a provider model, a `FunctionModel`, a `ReplayModel`), so the
instructions, the user prompt, every tool return, every retry and correction prompt, and the history of
earlier responses are scrubbed by the step's `SecretScrubber` on the way out, whichever part of Nighthawk or
pydantic-ai wrote them. A replay store behind it therefore never receives a secret value either.

Responses come back untouched: the model only ever saw scrubbed text, and tools must run what it wrote.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from ._secrets import current_scrubber

__all__ = ["SecretScrubbingModel"]


def _scrubbed(
    messages: list[ModelMessage], parameters: ModelRequestParameters
) -> tuple[list[ModelMessage], ModelRequestParameters]:
    scrubber = current_scrubber()
    return scrubber.scrub_data(messages), scrubber.scrub_data(parameters)


class SecretScrubbingModel(WrapperModel):
    """Wraps a model so that nothing it is sent holds a secret value of the current step."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        messages, model_request_parameters = _scrubbed(messages, model_request_parameters)
        return await self.wrapped.request(messages, model_settings, model_request_parameters)

    async def count_tokens(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> RequestUsage:
        messages, model_request_parameters = _scrubbed(messages, model_request_parameters)
        return await self.wrapped.count_tokens(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        messages, model_request_parameters = _scrubbed(messages, model_request_parameters)
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
