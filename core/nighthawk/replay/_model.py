"""`ReplayModel`: a pydantic-ai model that answers from a replay store and records through the model it wraps."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings, merge_model_settings

from ..agents import agent_model, is_agent_model
from ..errors import NighthawkError, ReplayMissError
from ..model._provider_models import check_credentials
from ..secrets._scrubber import current_scrubber
from ..step._context import current_step
from ._canonical import canonical_with_ids, digest_of, round_of
from ._diff import miss_message
from ._format import Exchange
from ._mode import ReplayMode, resolve_mode
from ._store import ReplayStore

__all__ = ["ReplayModel"]


def _rendering_settings(limits: Any, style: str) -> dict[str, Any]:
    """What besides the program and the data shapes a rendered prompt: the context limits and the style."""
    return {"context_limits": dataclasses.asdict(limits), "json_renderer_style": style}


def _refuse_masked_answer(hit: Exchange, store: ReplayStore) -> None:
    """Fail rather than replay a tool call whose recorded arguments lost a secret value to the mask."""
    placeholders = {store.redaction.placeholder, current_scrubber().redaction.placeholder}
    for part in hit.response.get("parts") or ():
        if isinstance(part, dict) and part.get("part_kind") == "tool-call":
            arguments = json.dumps(part.get("args"), ensure_ascii=False)
            placeholder = next((text for text in placeholders if text in arguments), None)
            if placeholder is not None:
                raise ReplayMissError(
                    f"the recorded answer for block {hit.block!r}, round {hit.round} calls `{part.get('tool_name')}` "
                    f"with {placeholder!r} in its arguments: when it was recorded, the model wrote a secret value "
                    "there, and a replay store never keeps one, so replaying it would run the placeholder instead "
                    "of the value and give a different result than the recorded run. Re-record it so the model "
                    "refers to the secret by its variable name, or remove the secret from the block's scope."
                )


class ReplayModel(Model):
    """A pydantic-ai model that answers from a `ReplayStore`, recording through a wrapped model when allowed.

    The wrapped model receives each request exactly as it would unwrapped (it prepares the history for its own
    wire). It is built only when a request has to reach it, so replaying needs no provider package, key or
    network.
    """

    def __init__(
        self,
        wrapped: Model | str | None,
        store: ReplayStore | str | os.PathLike[str],
        mode: ReplayMode | None = None,
        *,
        authored: bool | None = None,
    ) -> None:
        """Wrap `wrapped` with the store at `store`.

        Args:
            wrapped: The model to record from: a pydantic-ai `Model`, a `provider:model` string (built on the
                first request that reaches it), or `None` to replay only.
            store: A `ReplayStore` or the path of its file.
            mode: `replay` answers only from the store; `record` asks the wrapped model every time and stores
                the answer; `auto` replays hits and records misses. `None` reads `NIGHTHAWK_REPLAY_MODE`,
                defaulting to `replay`.
            authored: Mark recorded entries as authored; by default true for pydantic-ai's `FunctionModel`
                and `TestModel`, false for any other model.

        Raises:
            NighthawkError: Unknown `mode`, `record`/`auto` without a model to record from, a store that
                `record`/`auto` could not write, or an existing file that is not a valid store (both checked
                here, before any request is paid for).
        """
        super().__init__()
        mode = resolve_mode(mode)
        if mode != "replay" and wrapped is None:
            raise NighthawkError(
                f"replay `mode` {mode!r} records, so it needs a model to record from: pass `wrapped=` (a "
                "pydantic-ai model or a 'provider:model' string), or use mode='replay'"
            )
        self.store = store if isinstance(store, ReplayStore) else ReplayStore(store)
        if mode != "replay":
            self.store.check_writable()
        self.store.check_readable()  # a broken file fails here, not after a recorded request was paid for
        self.mode: ReplayMode = mode
        self._spec = wrapped
        self._wrapped: Model | None = wrapped if isinstance(wrapped, Model) else None
        self._authored = authored

    @property
    def model_name(self) -> str:
        # The wrapped model's name, so displays and events read the same whether a block is replayed or
        # recorded.
        if self._spec is None:
            return "replay"
        return self._spec.split(":", 1)[-1] if isinstance(self._spec, str) else self._spec.model_name

    @property
    def system(self) -> str:
        return "replay"

    def __repr__(self) -> str:
        return f"ReplayModel({self._label()!r}, {self.store!r}, mode={self.mode!r})"

    def _label(self) -> str:
        if self._spec is None or isinstance(self._spec, str):
            return self._spec or "none"
        return f"{self._spec.system}:{self._spec.model_name}"

    def _resolve(self) -> Model:
        if self._wrapped is None:
            from pydantic_ai.exceptions import UserError
            from pydantic_ai.models import infer_model

            assert isinstance(self._spec, str)
            check_credentials(self._spec)
            try:
                self._wrapped = agent_model(self._spec) if is_agent_model(self._spec) else infer_model(self._spec)
            except (UserError, ImportError, ValueError) as exc:
                raise NighthawkError(f"cannot record with `model` {self._spec!r}: {exc}") from exc
        return self._wrapped

    def _run_scope(self) -> AbstractAsyncContextManager[None]:
        # A coding agent keeps its tool server and its session for the whole run; building one is cheap
        # (nothing starts before its first request), so it is built here when it is the model to record from.
        if self.mode != "replay" and (self._wrapped is not None or is_agent_model(self._spec)):
            return self._resolve()._run_scope()
        return nullcontext()

    def _is_authored(self, model: Model) -> bool:
        if self._authored is not None:
            return self._authored
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.models.test import TestModel

        return isinstance(model, (FunctionModel, TestModel))

    def prepare_messages(
        self, messages: list[ModelMessage], model_request_parameters: ModelRequestParameters | None = None
    ) -> list[ModelMessage]:
        # Keep the history provider-neutral: the digest is taken on it, and the wrapped model prepares it
        # for its own wire when `request` records.
        return messages

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        request, _ = canonical_with_ids(messages, model_settings, model_request_parameters, self.store.redaction)
        if self.mode != "record":
            hit = self.store.find(digest_of(request))
            if hit is not None:
                _refuse_masked_answer(hit, self.store)
                return self.store.response_for(hit)
        step = current_step()
        block = step.step_id if step is not None else None
        rendering = _rendering_settings(step.rendering.limits, step.rendering.style) if step is not None else None
        if self.mode == "replay":
            raise ReplayMissError(miss_message(self.store, request, block, round_of(messages), rendering))
        model = self._resolve()
        prepared = model.prepare_messages(list(messages), model_request_parameters)
        # The wrapped model's own default settings apply when it answers; they are not part of the key.
        settings = merge_model_settings(model.settings, model_settings)
        response = await model.request(prepared, settings, model_request_parameters)
        self.store.record_exchange(
            messages,
            response,
            model_request_parameters=model_request_parameters,
            model_settings=model_settings,
            model=f"{model.system}:{model.model_name}",
            authored=self._is_authored(model),
            block=block,
            rendering=rendering,
        )
        return response

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NighthawkError("a replay store answers whole requests only; streamed requests are not supported")
        yield  # pragma: no cover - makes this an async generator

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        if self._wrapped is not None:
            return await self._wrapped.__aexit__(*exc_info)
        return None
