"""The model-bound budget gate: a pydantic-ai wrapper that counts every request in its groups before sending it
(and shows each request and response to the step's `StepWatch`).

pydantic-ai checks a step's own limits before each of its requests, but it cannot see the other steps of a
group running at the same time; this gate asks the groups themselves (`budget.reserve_request`, then the
ledgers of groups shared with other processes), so a group's request limit holds however many steps are in
flight, here or on a Ray cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from ..budget import reserve_request, reserve_shared_request
from ..step._context import current_step
from ._send_gate import requesting

__all__ = ["BudgetGateModel"]


class BudgetGateModel(WrapperModel):
    """Wraps a model so that no request goes out that an enclosing `nighthawk.budget(...)` cannot take."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        watch = _current_watch()
        if watch is not None:
            watch.before_request(messages)
            if watch.first_request is None:
                watch.first_request = (messages, model_settings, model_request_parameters)
        with requesting():
            reserve_request()
            await reserve_shared_request()
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        if watch is not None:
            watch.after_response(response)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        watch = _current_watch()
        if watch is not None:
            watch.before_request(messages)
        with requesting():
            reserve_request()
            await reserve_shared_request()
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream:
                yield stream
        if watch is not None:
            watch.after_response(stream.get())


def _current_watch() -> Any:
    step = current_step()  # the step whose model sends this request (a nested step is current in its own)
    return None if step is None else step.watch
