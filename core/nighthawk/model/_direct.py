"""A step's first round without pydantic-ai's agent loop, when its first response ends the step.

Most steps of a map, and most blocks, are one request whose response sets the write bindings and gives the
outcome. Around that request pydantic-ai's agent run spends about 2 ms of CPU (its graph, task groups,
context copies), more than the request itself; on a 2-core machine that CPU, not the provider's latency,
caps a map's throughput. So once a block has run one step through the agent (which shows what pydantic-ai
sends: its settings, tool and output definitions, see `RequestTemplate`), its later steps send their first
request through pydantic-ai's own request helper (its timeout, continued responses, run context), with the
step's own instructions and prompt in the places the agent put the first step's.

A first response is settled here only when it is plain: `nh_eval` / `nh_assign` calls with arguments of the
exact expected shape, then one outcome call, and the outcome check accepts it. Everything else (text, an
unknown tool, arguments pydantic-ai would have to validate, several outcomes, a cut response, a retry the
check asks for) is handed to the agent run as the answer to its first request (`AnsweredOnce`), together
with the results of the tool calls made here (`Handover`), which are not made a second time. The step then
goes on as if the agent had run it from the start: until a retry, pydantic-ai's retry counters are zero.

The executor keeps the agent for whole steps where its run does more than this module repeats: user tools
or an agent's toolsets, a `FallbackModel` (the agent settles what failed attempts cost), pydantic-ai's own
instrumentation, and a prompt the model would rewrite before sending. tests/core/test_direct_round.py runs
the same calls both ways and compares the requests, results, usage and events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai import ModelRetry
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage, UsageLimits
from pydantic_core import from_json

from ..step._outcome_schema import OUTCOME_TOOL

if TYPE_CHECKING:
    from ..step._context import StepContext

try:  # pydantic-ai's own request helper and bookkeeping, so a request and its usage are the agent run's
    from pydantic_ai._agent_graph import _record_billed_usage, model_request, resolve_conversation_id, resolve_run_id
    from pydantic_ai._context_size import context_input_tokens
    from pydantic_ai._genai_prices import fill_response_cost
    from genai_prices.data_snapshot import get_snapshot  # pydantic-ai's price data, to skip unknown models
    from pydantic_ai._utils import now_utc
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext
except ImportError:  # another pydantic-ai layout: every step runs through the agent
    AVAILABLE = False
else:
    AVAILABLE = True

__all__ = [
    "AVAILABLE",
    "AnsweredOnce",
    "Handover",
    "RequestTemplate",
    "first_round",
    "has_fallback",
    "replayed_result",
    "replayed_retry",
]

_TOOL_ARGUMENTS = {"nh_eval": ("expression",), "nh_assign": ("target_path", "expression")}
_PLAIN_ENDINGS = (None, "stop", "tool_call")


@dataclass(frozen=True)
class RequestTemplate:
    """What the agent sent as a block's first request: reused, with another step's instructions and prompt."""

    request: ModelRequest
    settings: dict[str, Any]
    parameters: ModelRequestParameters
    run_settings: dict[str, Any]
    """The settings the executor gave the agent run; a step with other settings runs through the agent."""

    @classmethod
    def observed(
        cls, sent: tuple[Any, Any, Any] | None, *, content: Any, instructions: str, run_settings: dict[str, Any]
    ) -> RequestTemplate | None:
        """The template of a first request the budget gate saw, when it has the shape this module rebuilds."""
        if sent is None:
            return None
        messages, settings, parameters = sent
        if len(messages) != 1 or type(messages[0]) is not ModelRequest:
            return None
        request = messages[0]
        parts = request.parts
        if len(parts) != 1 or type(parts[0]) is not UserPromptPart or parts[0].content != content:
            return None
        shown = parameters.instruction_parts or ()
        if request.instructions != instructions or len(shown) != 1 or shown[0].content != instructions:
            return None
        return cls(request, dict(settings or {}), parameters, dict(run_settings))

    def first_request(self, content: Any, instructions: str) -> tuple[ModelRequest, ModelRequestParameters]:
        """The first request of another step of the block, and its parameters."""
        now = now_utc()
        request = replace(
            self.request,
            parts=[replace(self.request.parts[0], content=content, timestamp=now)],
            instructions=instructions,
            timestamp=now,
            run_id=resolve_run_id(None, None),
            conversation_id=resolve_conversation_id(None, None),
        )
        (shown,) = self.parameters.instruction_parts or ()
        return request, replace(self.parameters, instruction_parts=[replace(shown, content=instructions)])


@dataclass
class Handover:
    """A first response the agent run settles: its tool results already made, and the outcome check's retry."""

    response: ModelResponse
    results: dict[str, Any] = field(default_factory=dict)
    """Tool results by tool call id, for calls made before the handover."""
    retry: ModelRetry | None = None
    """The retry the outcome check asked for after those calls, raised again when the agent checks the outcome."""


class AnsweredOnce(WrapperModel):
    """A model whose first request is answered with a response already received; later ones go to the model."""

    def __init__(self, wrapped: Any, response: ModelResponse) -> None:
        super().__init__(wrapped)
        self._answer: ModelResponse | None = response

    async def request(self, messages: list[Any], model_settings: Any, model_request_parameters: Any) -> ModelResponse:
        answer, self._answer = self._answer, None
        if answer is not None:
            return answer
        return await self.wrapped.request(messages, model_settings, model_request_parameters)


def replayed_result(ctx: Any) -> Any:
    """The result of a tool call made before a handover, when `ctx` is that call in the agent's first round."""
    handover: Handover | None = ctx.deps.handover
    if handover is None or ctx.run_step != 1:
        return None
    return handover.results.pop(ctx.tool_call_id or "", None)


def replayed_retry(ctx: Any) -> ModelRetry | None:
    """The outcome check's retry made before a handover, when the agent checks the first round's outcome."""
    handover: Handover | None = ctx.deps.handover
    if handover is None or ctx.run_step != 1:
        return None
    retry, handover.retry = handover.retry, None
    return retry


@dataclass
class _RoundContext:
    """The part of pydantic-ai's `RunContext` the step's tools and outcome check read."""

    deps: StepContext
    messages: list[Any]
    tool_call_id: str | None = None
    run_step: int = 1


async def first_round(
    step: StepContext,
    *,
    template: RequestTemplate,
    model: Model,
    content: Any,
    instructions: str,
    messages: list[Any],
    usage: RunUsage,
    usage_limits: UsageLimits,
    tools: dict[str, Callable[..., Awaitable[Any]]],
    check_outcome: Callable[..., Awaitable[Any]],
) -> tuple[bool, Any]:
    """Send the step's first request; `(True, outcome)` when its response ended the step here, `(False,
    handover)` for the agent run to go on from, `(False, None)` when nothing was sent (the agent runs the
    step whole). `messages` and `usage` are filled as the agent would fill them."""
    request, parameters = template.first_request(content, instructions)
    # What the model rewrites before sending (a note before text that looks like a system frame, escaped
    # special tokens) depends on the prompt: the agent prepares such a request itself.
    prepared = model.prepare_messages([request], parameters)
    if prepared != [request]:
        return False, None
    messages.append(request)
    usage_limits.check_before_request(usage)
    settings = ModelSettings(**template.settings)
    context = ModelRequestContext(
        model=model, messages=[request], model_settings=settings, model_request_parameters=parameters
    )
    run_context = RunContext(
        deps=step, model=model, usage=usage, usage_limits=usage_limits, prompt=content, messages=messages,
        run_step=1, run_id=request.run_id,
    )
    # What the agent does at the start of a run: a client last used on another event loop (a sync caller's
    # former loop) is replaced, and the connections the model opens on demand are held for the request. The
    # request helper applies `request_timeout`, continues a suspended response and makes the run context current.
    model._refresh_http_client()
    async with model._run_scope():
        response = await model_request(model, request_context=context, run_context=run_context, on_progress=_ignored)
    # The response goes to the agent untouched on a handover; the bookkeeping marks a copy.
    kept = replace(response, usage=replace(response.usage, details=dict(response.usage.details)))
    kept.run_id = kept.run_id or request.run_id
    kept.conversation_id = kept.conversation_id or request.conversation_id
    kept.model_id = kept.model_id or model.model_id
    _fill_cost(kept)
    messages.append(kept)
    trial = replace(usage, details=dict(usage.details))
    trial.requests += 1
    _record_billed_usage(trial, kept)
    try:
        usage_limits.check_tokens(trial)
        usage_limits.check_cost(trial, warn_if_cost_unavailable=False)
        usage_limits.check_per_request_input_tokens(context_input_tokens(kept))
    except BaseException:
        _count(usage, kept, 0)
        raise
    handover = Handover(response)
    calls = _plain_calls(response)
    if calls is None:
        return False, handover
    return await _settled(
        step, handover, calls, kept=kept, messages=messages, usage=usage, usage_limits=usage_limits, tools=tools,
        check_outcome=check_outcome,
    )


async def _settled(
    step: StepContext, handover: Handover, calls: list[ToolCallPart], *, kept: ModelResponse, messages: list[Any],
    usage: RunUsage, usage_limits: UsageLimits, tools: dict[str, Callable[..., Awaitable[Any]]],
    check_outcome: Callable[..., Awaitable[Any]],
) -> tuple[bool, Any]:
    """Make a plain first response's tool calls and check its outcome: `(True, outcome)` when the check accepts
    it, `(False, handover)` when it asks for a retry, which the agent run makes."""
    *tool_calls, outcome_call = calls
    made = 0
    try:
        for call in tool_calls:
            ctx = _RoundContext(step, messages, call.tool_call_id)
            handover.results[call.tool_call_id] = await tools[call.tool_name](ctx, **call.args_as_dict())
            made += 1
        try:
            outcome = await check_outcome(_RoundContext(step, messages, outcome_call.tool_call_id), _arguments(outcome_call))
        except ModelRetry as retry:
            handover.retry = retry
            return False, handover
    except BaseException:
        _count(usage, kept, made)
        raise
    _count(usage, kept, made)
    usage_limits.check_cost(usage)  # as the agent does when its run ends (it may warn that cost is unknown)
    return True, outcome


def _count(usage: RunUsage, kept: ModelResponse, made: int) -> None:
    """Count in `usage` what the agent counts for a first round that made `made` tool calls."""
    # What the agent counts for this round (the responses a model rejected before it included; an
    # uninstrumented run credits no enclosing run); not on a handover, where the agent counts it itself.
    usage.requests += 1
    _record_billed_usage(usage, kept)
    usage.tool_calls += made


def has_fallback(model: Any) -> bool:
    """Whether `model`, or a model it wraps, is a `FallbackModel`: the agent settles what its attempts cost
    (also when all of them fail), so such steps run through the agent."""
    from pydantic_ai.models.fallback import FallbackModel

    while model is not None:
        if isinstance(model, FallbackModel):
            return True
        model = getattr(model, "wrapped", None)
    return False


_UNPRICED_MAX = 64
_unpriced: dict[tuple[str | None, str | None, str | None], object] = {}
"""Models genai-prices does not know (a local server's, a fine-tune), by (model, provider URL, provider), with
the price data they were looked up in."""


def _fill_cost(response: ModelResponse) -> None:
    """`fill_response_cost`, without looking again for a model the price data was found not to know: the lookup
    walks every model of the provider for each response (a tenth of a millisecond), and every item of a map to
    a local model would pay it for nothing."""
    key = (response.model_name, response.provider_url, response.provider_name)
    snapshot = get_snapshot()
    if response.usage.cost is not None or _unpriced.get(key) is snapshot:
        return
    fill_response_cost(response)
    if response.usage.cost is None and not _known(snapshot, *key):
        if len(_unpriced) >= _UNPRICED_MAX:
            _unpriced.clear()
        _unpriced[key] = snapshot


def _known(snapshot: Any, model_name: str | None, url: str | None, provider: str | None) -> bool:
    """Whether the price data knows the model under its provider URL or name (pydantic-ai's lookup order)."""
    if not model_name:
        return False
    for provider_id, provider_url in ((None, url), (provider, None)):
        if provider_id or provider_url:
            try:
                snapshot.find_provider_model(model_name, None, provider_id, provider_url)
            except LookupError:
                continue
            return True
    return False


def _ignored(response: ModelResponse) -> None:
    """The request helper reports each segment of a continued response; the response it returns is what counts."""


def _plain_calls(response: ModelResponse) -> list[ToolCallPart] | None:
    """The response's tool calls when it is plain (see the module's note), else `None`."""
    if response.finish_reason not in _PLAIN_ENDINGS or response.state != "complete":
        return None
    calls: list[ToolCallPart] = []
    for part in response.parts:
        if type(part) is ToolCallPart:
            calls.append(part)
        elif type(part) not in (TextPart, ThinkingPart):
            return None
    if not calls or calls[-1].tool_name != OUTCOME_TOOL or _arguments(calls[-1]) is None:
        return None
    ids = {call.tool_call_id for call in calls}
    if len(ids) != len(calls) or "" in ids:
        return None
    for call in calls[:-1]:
        expected = _TOOL_ARGUMENTS.get(call.tool_name)
        arguments = _arguments(call) if expected else None
        if arguments is None or sorted(arguments) != sorted(expected or ()):
            return None
        if not all(type(value) is str for value in arguments.values()):
            return None
    return calls


def _arguments(call: ToolCallPart) -> dict[str, Any] | None:
    """The call's arguments as a dict, or `None` when they are not a JSON object."""
    args = call.args
    if isinstance(args, str):
        try:
            args = from_json(args) if args.strip() else {}
        except ValueError:
            return None
    return args if type(args) is dict else None
