"""`CodingAgentModel`: a pydantic-ai model whose answers come from a coding agent working through MCP.

pydantic-ai sees an ordinary model. The first request of a step starts the agent on the step's prompt with
the block's tools served by a `ToolBridge`; every tool call the agent makes is returned as a model response
holding that call, pydantic-ai runs it as it runs any tool, and the next request carries the result back to
the waiting agent. When the agent calls `nh_outcome` (or, failing that, ends its turn with the outcome as
JSON), the response holds the outcome call, with the turn's usage. A correction pydantic-ai sends back
resumes the agent's session with it. So budgets, usage, events, replay stores and `nighthawk.map` work as they
do for an API model.

One run of pydantic-ai is one step: the run scope (`_run_scope`) owns the bridge and the agent's turn, and
closes both when the run ends, however it ends.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic_ai._instrumentation import get_instructions
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, check_allow_model_requests
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from ..errors import ExecutionError, NighthawkError
from ._bridge import SERVER_NAME, PendingCall, ToolBridge, ToolSpec, require_bridge
from ._settings import AgentModelSettings, check_agent_settings

__all__ = ["AgentFailure", "Backend", "CodingAgentModel", "Turn", "TurnResult"]

AGENT_INSTRUCTIONS = f"""

You reach the step's tools as the tools of the MCP server `{SERVER_NAME}`. Call nh_outcome exactly once to \
end the step, then stop. If you cannot call it, make your final reply the outcome object as JSON, nothing else."""
"""Added to the step's system prompt for a coding agent only: API models keep their prompts byte for byte."""

_OUTCOME_RECEIVED = "Outcome received. Stop now: reply with the single word done."


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One run of the agent until it ends its turn."""

    prompt: str
    """What the agent is asked: the step's user prompt, or a correction when its session resumes."""
    instructions: str
    """The step's system prompt, with `AGENT_INSTRUCTIONS`."""
    session_id: str | None
    """The agent's session to resume, `None` on the first turn."""
    model: str | None
    """The agent's model; `None` (`<backend>:default`) sends no model choice."""
    bridge: ToolBridge
    """Where the agent finds the block's tools."""
    tool_names: tuple[str, ...]
    """The names of the tools the bridge offers."""
    settings: AgentModelSettings


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    """How a turn ended."""

    text: str
    """The agent's final reply."""
    session_id: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


class AgentFailure(Exception):
    """The agent could not finish its turn; the message is the backend's own."""


class Backend(Protocol):
    """One way of running a coding agent."""

    system: str
    """The model prefix, such as `claude-code-cli`."""
    settings_class: type[AgentModelSettings]

    def check_installed(self, settings: AgentModelSettings) -> None:
        """Raise `NighthawkError` naming what to install when the agent cannot be started."""

    async def run_turn(self, turn: Turn) -> TurnResult:
        """Run the agent for one turn; cancelled, it leaves nothing running. Raises `AgentFailure`."""


@dataclass(kw_only=True)
class _Run:
    """What one pydantic-ai run (one step) holds between its requests."""

    stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    bridge: ToolBridge | None = None
    turn: asyncio.Task[TurnResult] | None = None
    session_id: str | None = None
    calls: dict[str, PendingCall] = field(default_factory=dict)
    """Calls handed to pydantic-ai, by the id of their tool call part, until their result comes back."""
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    """The arguments of the agent's `nh_outcome` calls in the current turn (more than one is corrected)."""

    async def close(self) -> None:
        turn, self.turn = self.turn, None
        try:
            if turn is not None:
                turn.cancel()
                await asyncio.wait({turn})
                if not turn.cancelled():
                    turn.exception()  # retrieved: the run is over and nobody else will read it
        finally:
            await self.stack.aclose()


_runs: ContextVar[_Run | None] = ContextVar("nighthawk_agent_run", default=None)


class CodingAgentModel(Model):
    """A pydantic-ai `Model` answered by a coding agent (Claude Code or Codex) that calls the block's tools."""

    def __init__(self, backend: Backend, model_name: str) -> None:
        super().__init__()
        self._backend = backend
        self._model_name = model_name

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def system(self) -> str:
        return self._backend.system

    @asynccontextmanager
    async def _run_scope(self) -> AsyncIterator[None]:  # type: ignore[override]
        run = _Run()
        token = _runs.set(run)
        try:
            yield
        finally:
            _runs.reset(token)
            await run.close()

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        check_allow_model_requests()  # an agent spends real money: tests must opt in, as for any provider
        model_settings, parameters = self.prepare_request(model_settings, model_request_parameters)
        run = _runs.get()
        if run is None:
            raise NighthawkError(
                f"a `{self.system}:` model answers only inside an agent run (a Natural block), not a direct request"
            )
        label = f"{self.system}:{self._model_name}"
        settings = check_agent_settings(self._backend.settings_class, label, dict(model_settings or {}))
        request = messages[-1]
        assert isinstance(request, ModelRequest), request
        if run.turn is None:
            await self._start_turn(run, messages, request, settings, parameters)
        else:
            _settle(run, request)
        return await self._next_response(run, parameters)

    async def _start_turn(
        self,
        run: _Run,
        messages: list[ModelMessage],
        request: ModelRequest,
        settings: AgentModelSettings,
        parameters: ModelRequestParameters,
    ) -> None:
        prompt = _turn_prompt(request)
        if run.bridge is None:
            require_bridge(self.system)
            self._backend.check_installed(settings)
            specs = _tool_specs(parameters, settings)
            run.bridge = await run.stack.enter_async_context(ToolBridge(specs))
        turn = Turn(
            prompt=prompt,
            instructions=(get_instructions(messages, parameters) or "") + AGENT_INSTRUCTIONS,
            session_id=run.session_id,
            model=None if self._model_name == "default" else self._model_name,
            bridge=run.bridge,
            tool_names=tuple(run.bridge.tool_names),
            settings=settings,
        )
        run.turn = asyncio.ensure_future(self._backend.run_turn(turn))

    async def _next_response(self, run: _Run, parameters: ModelRequestParameters) -> ModelResponse:
        bridge, turn = run.bridge, run.turn
        assert bridge is not None and turn is not None
        outcome_tool = parameters.output_tools[0].name if parameters.output_tools else None
        while True:
            waiting = asyncio.ensure_future(bridge.calls.get())
            try:
                await asyncio.wait({waiting, turn}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not waiting.done():
                    waiting.cancel()
            if waiting.done() and not waiting.cancelled():
                calls = [waiting.result()]
                while not bridge.calls.empty():
                    calls.append(bridge.calls.get_nowait())
                parts = []
                for call in calls:
                    if call.name == outcome_tool:
                        # Held until the turn ends, so the response carries the turn's usage.
                        run.outcomes.append(call.arguments)
                        call.answer.set_result((_OUTCOME_RECEIVED, False))
                        continue
                    call_id = self._call_id()
                    run.calls[call_id] = call
                    parts.append(ToolCallPart(tool_name=call.name, args=call.arguments, tool_call_id=call_id))
                if parts:
                    return ModelResponse(parts=parts, model_name=self._model_name, provider_name=self.system)
                continue
            return self._turn_response(run, turn, outcome_tool)

    def _call_id(self) -> str:
        return f"{self.system}-{uuid.uuid4().hex[:16]}"

    def _turn_response(self, run: _Run, turn: asyncio.Task[TurnResult], outcome_tool: str | None) -> ModelResponse:
        run.turn = None
        try:
            result = turn.result()  # a turn the closing run cancelled raises CancelledError here
        except (AgentFailure, OSError, ValueError) as exc:  # its own report, or it could not be run or read
            raise ExecutionError(f"the coding agent `{self.system}` failed: {exc}") from exc
        run.session_id = result.session_id or run.session_id
        outcomes, run.outcomes = run.outcomes or [_json_outcome(result.text)], []
        parts: list[Any]
        if outcomes != [None] and outcome_tool is not None:
            parts = [
                ToolCallPart(tool_name=outcome_tool, args=outcome, tool_call_id=self._call_id())
                for outcome in outcomes
            ]
        else:
            parts = [TextPart(content=result.text or "(the agent ended its turn without a reply)")]
        details = {"cost_usd": result.cost_usd} if result.cost_usd is not None else None
        return ModelResponse(
            parts=parts,
            usage=RequestUsage(input_tokens=result.input_tokens, output_tokens=result.output_tokens),
            model_name=self._model_name,
            provider_name=self.system,
            provider_details=details,
        )


def _tool_specs(parameters: ModelRequestParameters, settings: AgentModelSettings) -> list[ToolSpec]:
    allowed = settings.allowed_tool_names
    specs = [
        ToolSpec(name=tool.name, description=tool.description or "", parameters=tool.parameters_json_schema)
        for tool in parameters.function_tools
        if allowed is None or tool.name in allowed
    ]
    specs += [
        ToolSpec(name=tool.name, description=tool.description or "", parameters=tool.parameters_json_schema)
        for tool in parameters.output_tools
    ]
    return specs


def _turn_prompt(request: ModelRequest) -> str:
    """The text a new turn starts with: the user prompt, or pydantic-ai's correction (of a final reply, or of
    the `nh_outcome` calls, which come back as retry prompts or as tool results)."""
    texts: list[str] = []
    for part in request.parts:
        if isinstance(part, UserPromptPart):
            if not isinstance(part.content, str) and not all(isinstance(item, str) for item in part.content):
                # The executor turns this into a sentence naming the media bindings; sent on, the agent would
                # read the repr of every byte of them.
                raise NotImplementedError("a coding agent is prompted with text only, so it cannot take an image or document")
            texts.append(part.content if isinstance(part.content, str) else "\n".join(part.content))
        elif isinstance(part, RetryPromptPart):
            texts.append(part.model_response())
        elif isinstance(part, ToolReturnPart):
            texts.append(f"{part.tool_name}: {part.model_response_str()}")
    return "\n\n".join(texts)


def _settle(run: _Run, request: ModelRequest) -> None:
    """Hand the results pydantic-ai computed back to the agent's waiting calls."""
    for part in request.parts:
        if not isinstance(part, ToolReturnPart | RetryPromptPart) or part.tool_call_id not in run.calls:
            continue
        call = run.calls.pop(part.tool_call_id)
        if call.answer.done():
            continue
        if isinstance(part, ToolReturnPart):
            # An image the tool yielded (`nh_eval` of a figure) goes as MCP image content, as it would to an API
            # model; other files stay named in the text.
            call.images = [(file.media_type, file.data) for file in part.files
                           if isinstance(file, BinaryContent) and file.is_image]
            call.answer.set_result((part.model_response_str(), False))
        else:
            call.answer.set_result((part.model_response(), True))


def _json_outcome(text: str) -> dict[str, Any] | None:
    """The outcome object when the agent wrote it as its final reply (in a code fence or not)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[-1].rsplit("```", 1)[0].strip()
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "kind" in value else None
