"""Stage 4, the executor: turn a step into an outcome.

`StepExecutor` is the protocol (declared in `road/runtime.py`, which holds executors); `AgentStepExecutor` runs a pydantic-ai agent loop with the `nh_eval` and
`nh_assign` tools, the user tools in scope, and one output tool per allowed outcome kind. pydantic-ai is
imported on first use, so constructing an executor (or importing nighthawk) needs no provider, key or network.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import _listeners
from .._report import connection_error_message, http_error_message, output_cap_message, trim_advice
from ..budget import StepLimits, StepUsage, record_usage, running_step, step_limits
from ..configuration import StepExecutorConfiguration
from ..errors import BudgetExceededError, ExecutionError
from ..road.runtime import StepExecutor
from ..step._context import StepContext

if TYPE_CHECKING:
    # A type only: the outcome models import pydantic, which `import nighthawk` leaves out.
    from ..step._outcome_kinds import Outcome
    from ._step_agent import StepAgent
    from ._watch import StepWatch

# The kernel extension builds an executor when it loads, long before a step: the modules only a step needs
# (the model builder, the step agent, the prompt and media stack with hashlib and pathlib, the tools with
# the oversight hooks, secret scrubbing with base64) are imported by the functions below that run one, not
# at the top.

__all__ = ["OUTCOME_RETRIES", "TOOL_RETRIES", "AgentStepExecutor", "StepExecutor", "check_credentials"]

class AgentStepExecutor:
    """A step executor backed by a pydantic-ai agent.

    Build it with `AgentStepExecutor.from_configuration(configuration=StepExecutorConfiguration(...))`. The
    model is a `provider:model` string, resolved on the first step, or a pydantic-ai `Model` instance
    (for example `FunctionModel` or `TestModel` in tests).

    `AgentStepExecutor.from_agent(agent)` (or `agent=`) runs steps with a pydantic-ai `Agent` of your own:
    its model (when it has one), its model settings and its tools are kept, and each step adds the
    Nighthawk tools, the step's prompts and its outcome.
    """

    def __init__(self, configuration: StepExecutorConfiguration | None = None, *, agent: Any = None) -> None:
        self._configuration = configuration or StepExecutorConfiguration()
        self._agents: dict[tuple[tuple[str, ...], tuple[str, ...]], StepAgent] = {}
        self._templates: dict[tuple[Any, ...], Any] = {}
        """The first request the agent sent for a block, by block and outcome signature (`_direct.RequestTemplate`)."""
        self._model: Any = None
        self._building: Any = None
        """The build of the model on the import thread (a `concurrent.futures.Future`), once a step started it."""
        self._client_retries: int | None = None
        """The retry count set on the SDK clients of the models this executor built, when every model in its
        chain has one (then the per-request `max_retries` setting is left out: it would make pydantic-ai copy
        the client for every request)."""
        self._user_agent = agent

    @classmethod
    def from_configuration(cls, *, configuration: StepExecutorConfiguration) -> AgentStepExecutor:
        """Build an executor; nothing is contacted until the first step."""
        return cls(configuration)

    @classmethod
    def from_agent(cls, agent: Any, *, configuration: StepExecutorConfiguration | None = None) -> AgentStepExecutor:
        """Run steps with your own pydantic-ai `Agent` (its model, settings and tools kept)."""
        return cls(configuration, agent=agent)

    @property
    def agent(self) -> Any:
        """The pydantic-ai `Agent` given with `from_agent`, or `None`."""
        return self._user_agent

    def _chosen_model(self) -> Any:
        """The model steps use: the given agent's, when it has one, else the configuration's."""
        agent_model = getattr(self._user_agent, "model", None)
        return agent_model if agent_model is not None else self._configuration.model

    @property
    def configuration(self) -> StepExecutorConfiguration:
        return self._configuration

    def with_configuration(self, configuration: StepExecutorConfiguration) -> AgentStepExecutor:
        """A new executor with another configuration (the same model instance when the model is unchanged)."""
        executor = AgentStepExecutor(configuration, agent=self._user_agent)
        if configuration.model == self._configuration.model and configuration.max_retries == self._configuration.max_retries:
            executor._model = self._model
            executor._client_retries = self._client_retries
        return executor

    @property
    def model_label(self) -> str:
        """A readable name of the model for displays and logs."""
        model = self._chosen_model()
        if isinstance(model, str):
            return model
        system = str(getattr(model, "system", type(model).__name__))
        # Some models already name their system (FunctionModel's `function:respond:`): say it once.
        name = str(getattr(model, "model_name", "?")).removeprefix(f"{system}:").strip(":")
        return f"{system}:{name}"

    def __repr__(self) -> str:
        return f"AgentStepExecutor(model={self.model_label!r})"

    # --- model and agent, built once -------------------------------------------------------------

    def _resolve_model(self) -> Any:
        if self._model is None:
            from ._provider_models import build_model  # (see the note at the top)

            retries = self._configuration.max_retries
            chain = [build_model(self._chosen_model(), retries)]
            chain += [build_model(fallback, retries) for fallback in self._configuration.fallback_models]
            # Only when every model's client took the count can the request settings leave it out.
            self._client_retries = retries if all(built for _, built in chain) else None
            model = chain[0][0]
            if self._configuration.fallback_models:
                from pydantic_ai.models.fallback import FallbackModel

                model = FallbackModel(model, *(fallback for fallback, _ in chain[1:]))
            self._model = _gated(model)
        return self._model

    def routed(self, route: Callable[[Any], Any]) -> AgentStepExecutor:
        """A copy whose requests go to `route(model)` (the provider's pydantic-ai model, built now) instead of
        the model itself, still behind the budget gate and the secret scrubber; its configuration, and so its
        label, is this one's. A batch-API map routes its requests to the provider's batches this way."""
        from ._provider_models import build_model

        executor = AgentStepExecutor(self._configuration, agent=self._user_agent)
        executor._model = _gated(route(build_model(self._chosen_model(), None)[0]))  # retries as each request says
        return executor

    def _get_agent(self, step: StepContext) -> StepAgent:
        # pydantic-ai fixes the output tools when an agent has an output validator, so there is one agent
        # per outcome signature; a notebook or program uses a handful.
        key = (step.allowed_outcomes, tuple(step.raise_types))
        agent = self._agents.get(key)
        if agent is None:
            from ._step_agent import build_agent, output_spec

            agent = self._agents[key] = build_agent(output_spec(step.outcome_schema))
        return agent

    def _template(self, step: StepContext, run_settings: dict[str, Any]) -> Any:
        """The request template a step of this block may send its first request with (see `_direct`), or `None`."""
        template = self._templates.get(_block_key(step))
        return template if template is not None and template.run_settings == run_settings else None

    def _remember(self, step: StepContext, watch: Any, content: Any, instructions: str, run_settings: dict[str, Any]) -> None:
        """Keep the first request the agent sent for this step's block, for the block's later steps."""
        from ._direct import RequestTemplate

        observed = RequestTemplate.observed(
            watch.first_request, content=content, instructions=instructions, run_settings=run_settings
        )
        if observed is not None:
            self._templates[_block_key(step)] = observed

    # --- one step ---------------------------------------------------------------------------------

    def _render(self, step: StepContext) -> tuple[tuple[Any, ...], tuple[str, str]]:
        """The step's attachments (its media read bindings, read now) and its prompts, which name them."""
        from ..prompting._media import collect_attachments  # hashlib, pathlib (see the note at the top)
        from ._prompt import render_prompts

        limits = step.rendering.limits
        attachments = collect_attachments(
            step.program.reads, step.step_locals, max_items=limits.media_max_items, max_bytes=limits.media_max_bytes
        )
        return attachments, render_prompts(step, self._configuration, attachments)

    async def run_step(self, step: StepContext) -> Outcome:
        """Run the model loop for `step` and return the outcome it settled on (already resolved on `step`)."""
        await self._model_built()
        return await self._run(step, await self._prepare(step))

    async def _model_built(self) -> None:
        """Wait until the model is built: the first step builds it, on the import thread."""
        from ..threads._loop import awaited, on_import_thread  # here, not at the top: asyncio

        if self._model is None:
            # The first step builds the model, importing pydantic-ai and the provider's SDK (seconds): on the
            # import thread, so an interrupt during it gives control back at once (see `on_import_thread`).
            # The steps that start meanwhile (a map's) wait for the same build and go on in the order they came.
            building = self._building
            if building is None or building.cancelled() or (building.done() and building.exception() is not None):
                building = self._building = on_import_thread(self._resolve_model)  # again after a failure
            await awaited(building)

    async def _prepare(self, step: StepContext) -> _PreparedStep:
        """The agent of the step's outcome, its prompts (announced), tools, settings and limits, and its watch."""
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage

        from ..prompting._media import media_shown, user_content  # hashlib (see the note at the top)
        from ..threads._loop import on_user_thread
        from . import _direct  # pydantic-ai's models
        from ._prompt import prompt_cache_settings
        from ._step_agent import user_tool
        from ._watch import StepWatch

        model = self._resolve_model()
        step_agent = self._get_agent(step)
        # Rendering the locals calls their `__repr__`, and a figure draws itself: user code, so on the user's thread.
        attachments, (system_prompt, user_prompt) = await on_user_thread(lambda: self._render(step))
        if _listeners.listening():
            from .. import events  # here, not at the top: `%load_ext` loads this module, not the event classes

            events.emit(
                events.PromptRendered(
                    invocation_id=step.invocation_id,
                    system_prompt=system_prompt,
                    user_prompt=user_prompt,
                    media=media_shown(attachments),
                )
            )
        user_tools = {**step.tools, **step.tool_scope.tools}
        toolsets = [FunctionToolset([user_tool(definition) for definition in user_tools.values()])] if user_tools else []
        toolsets += self._agent_toolsets()
        limits = step_limits(self._configuration.step_budget)
        watch = StepWatch(
            step.invocation_id,
            max_repeated_calls=self._configuration.max_repeated_calls,
            max_idle_rounds=self._configuration.max_idle_rounds,
        )
        usage = RunUsage()  # pydantic-ai adds to it in place, so a failed step still reports what it spent
        content = user_content(user_prompt, attachments)
        run_settings = {**prompt_cache_settings(step), **self._request_settings()}
        # The first round goes straight to the model when the agent already showed what it sends for this
        # block, and nothing of the step needs the agent's own machinery (see `_direct`).
        direct = _direct.AVAILABLE and not toolsets and not _direct_excluded(step_agent.agent) and not _direct.has_fallback(model)
        return _PreparedStep(
            model=model,
            step_agent=step_agent,
            attachments=attachments,
            system_prompt=system_prompt,
            content=content,
            toolsets=toolsets,
            limits=limits,
            usage_limits=limits.usage_limits(),
            watch=watch,
            usage=usage,
            run_settings=run_settings,
            direct=direct,
            template=self._template(step, run_settings) if direct else None,
        )

    async def _run(self, step: StepContext, prepared: _PreparedStep) -> Outcome:
        """Run the prepared step and record what it spent, whether it settled or failed."""
        from pydantic_ai import Agent, capture_run_messages
        from pydantic_ai.exceptions import AgentRunError, ModelHTTPError, UserError

        from ._send_gate import passing_gate
        from ._wire_count import counting_answers

        usage = prepared.usage
        # Tool calls of one response run one after the other, in the order sent: each may read what the
        # previous one assigned, and an awaiting call must not let a later one overtake it.
        with (
            capture_run_messages() as messages,
            Agent.parallel_tool_call_execution_mode("sequential"),
            _user_thread_callables(),
            counting_answers() as wire,
        ):
            step.watch = prepared.watch
            # The wall-time budget is the runner's: it bounds the whole step, user code included.
            running_step(usage)  # its groups see what it spends as it goes, not only once it ends
            # A request the provider answered with an error (HTTP 500, ...) was sent, and the groups counted it
            # then, but pydantic-ai counts only answered ones: it is added to what the step reports, with the
            # failed answers the SDK retried by itself (seen by the client's answer count, when it has one).
            refused = 0
            try:
                async with passing_gate():  # a map's steps send their first requests in turn
                    output = await self._rounds(step, prepared, messages)
            except (TimeoutError, AgentRunError, UserError, NotImplementedError) as exc:
                refused = int(isinstance(exc, ModelHTTPError))  # the request that ended the run
                error = self._failure(exc, step, prepared, messages)
                if error is None:
                    raise
                raise error from exc
            finally:
                step.handover = None
                failed = max(refused, wire.failed)
                spent = StepUsage(
                    model=self.model_label,
                    # `wire.sent` also has the requests in flight when the step was cancelled (the provider
                    # answers and bills them); 0 for a client that reports nothing (a batch map's, a test model).
                    requests=max(usage.requests + failed, wire.sent),
                    failed_requests=failed,
                    input_tokens=usage.input_tokens or 0,
                    output_tokens=usage.output_tokens or 0,
                    cost_usd=None if usage.cost is None else float(usage.cost),
                    cache_read_tokens=usage.cache_read_tokens or 0,
                )
                step.usage = spent
                record_usage(spent, running=usage)
        return output

    async def _rounds(self, step: StepContext, prepared: _PreparedStep, messages: list[Any]) -> Any:
        """The step's model rounds: the first straight to the model when the block's template allows, then the agent's."""
        from . import _direct

        output: Any = None
        settled = False
        if prepared.template is not None:
            settled, output = await _direct.first_round(
                step,
                template=prepared.template,
                model=prepared.model,
                content=prepared.content,
                instructions=prepared.system_prompt,
                messages=messages,
                usage=prepared.usage,
                usage_limits=prepared.usage_limits,
                tools=prepared.step_agent.tools,
                check_outcome=prepared.step_agent.check_outcome,
            )
        if not settled:
            step.handover = output  # `None`, or the first round made above, which the agent goes on from
            model = prepared.model
            result = await prepared.step_agent.agent.run(
                prepared.content,
                model=model if output is None else _direct.AnsweredOnce(model, output.response),
                deps=step,
                instructions=prepared.system_prompt,
                model_settings=prepared.run_settings,
                toolsets=prepared.toolsets or None,
                usage_limits=prepared.usage_limits,
                usage=prepared.usage,
            )
            output = result.output
            if prepared.direct and step.handover is None:
                self._remember(step, prepared.watch, prepared.content, prepared.system_prompt, prepared.run_settings)
        return output

    def _failure(self, exc: Exception, step: StepContext, prepared: _PreparedStep, messages: list[Any]) -> Exception | None:
        """The error a failed run raises for `exc` (a timeout or one of pydantic-ai's), or `None` to raise `exc` itself."""
        from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior, UsageLimitExceeded, UserError

        from ..prompting._media import media_refusal

        watch = prepared.watch
        if isinstance(exc, TimeoutError):
            return ExecutionError(f"the model request failed: {exc or type(exc).__name__}")
        if isinstance(exc, UsageLimitExceeded):
            return _budget_error(exc, prepared.usage, prepared.limits)
        if isinstance(exc, ModelHTTPError):
            refusal = media_refusal(f"{exc.body or ''} {exc.message}", prepared.attachments, messages, self.model_label)
            return ExecutionError(refusal or http_error_message(prepared.model, exc.model_name, exc.status_code, exc.body))
        if isinstance(exc, (UserError, NotImplementedError)):
            # How pydantic-ai's own model classes refuse a media type their provider cannot take.
            refusal = media_refusal(str(exc), prepared.attachments, messages, self.model_label)
            return None if refusal is None else ExecutionError(refusal)
        if isinstance(exc, UnexpectedModelBehavior):
            if _cut_at_cap(exc, messages):
                cap = self._configuration.request_settings().get("max_tokens")
                # A model shown no tools (a local template without a tool section) writes prose until cut.
                return ExecutionError(watch.explain_unfinished(output_cap_message(cap)))
            problem = step.outcome_problem or _last_retry_reason(messages)
            reason = f"; last problem: {problem}" if problem else ""
            return ExecutionError(
                watch.explain_unfinished(
                    f"the model did not end the step with a valid outcome ({trim_advice(exc.message)}){reason}"
                )
            )
        if isinstance(exc, ModelAPIError):
            message = connection_error_message(
                prepared.model, exc.model_name, exc.message, error=exc, waited_s=watch.waited_s(),
                settings=self._configuration.request_settings(),
            )
            return ExecutionError(message)
        return ExecutionError(f"the model request failed: {trim_advice(str(exc))}")  # another `AgentRunError`


    def _agent_toolsets(self) -> list[Any]:
        """The tools of the given agent (its own function tools and toolsets), offered beside ours."""
        return [toolset for toolset in getattr(self._user_agent, "toolsets", ()) if getattr(toolset, "tools", True)]

    def _request_settings(self) -> dict[str, Any]:
        """The configuration's request settings, with the given agent's model settings over our defaults
        (the configuration's own `model_settings` win over both)."""
        settings = self._configuration.request_settings()
        explicit = self._configuration.model_settings or {}
        agent_settings = getattr(self._user_agent, "model_settings", None) or {}
        settings.update({key: value for key, value in agent_settings.items() if key not in explicit})
        if self._client_retries is not None and settings.get("max_retries") == self._client_retries:
            del settings["max_retries"]  # the clients carry it (see `_client_retries`)
        return settings


@dataclass(frozen=True, kw_only=True)
class _PreparedStep:
    """What a step's run needs, made before its first request."""

    model: Any
    """The executor's model, behind the budget gate and the secret scrubber."""
    step_agent: StepAgent
    attachments: tuple[Any, ...]
    """The media the prompt shows (a refusal of their type names them)."""
    system_prompt: str
    content: Any
    """The user prompt with its attachments, as the agent takes it."""
    toolsets: list[Any]
    """The user tools in scope and the given agent's, beside the Nighthawk tools."""
    limits: StepLimits
    usage_limits: Any
    """`limits` as pydantic-ai's `UsageLimits`."""
    watch: StepWatch
    usage: Any
    """pydantic-ai's `RunUsage`, which it adds to in place, so a failed step still reports what it spent."""
    run_settings: dict[str, Any]
    direct: bool
    """Whether the first round may go straight to the model (see `_direct`)."""
    template: Any
    """The block's request template for that first round, or `None`."""


@contextmanager
def _user_thread_callables() -> Iterator[None]:
    """For a step served by a sync caller: the sync callables pydantic-ai would send to worker threads (a sync
    scripted model) run on the caller's thread."""
    from pydantic_ai import Agent

    from ..threads._loop import user_thread_executor  # here, not at the top: `import nighthawk` stays free of asyncio

    executor = user_thread_executor()
    if executor is None:
        yield
        return
    with Agent.using_thread_executor(executor):
        yield


def _gated(model: Any) -> Any:
    from ..secrets._model import SecretScrubbingModel
    from ._budget_model import BudgetGateModel  # here: both subclass a pydantic-ai model

    # Every request is first counted in its budget groups (or refused), then passes the step's secret
    # scrubber before the model (or a replay store) sees it.
    return BudgetGateModel(SecretScrubbingModel(model))


def _budget_error(exc: Any, usage: Any, limits: StepLimits) -> BudgetExceededError:
    """Name the budget pydantic-ai's `UsageLimitExceeded` refers to, with the figure reached."""
    budget = limits.budget
    if budget.cost_usd is not None and usage.cost is not None and float(usage.cost) > budget.cost_usd:
        name, limit, reached = "cost_usd", budget.cost_usd, float(usage.cost)
    elif budget.total_tokens is not None and usage.total_tokens > budget.total_tokens:
        name, limit, reached = "total_tokens", budget.total_tokens, usage.total_tokens
    else:  # the request limit is checked before a request would exceed it
        name, limit, reached = "requests", budget.requests or 0, usage.requests
    return BudgetExceededError(level=limits.level.get(name, "step"), budget=name, limit=limit, reached=reached)


def _cut_at_cap(exc: Any, messages: list[Any]) -> bool:
    """Whether the step failed because a model response reached the output cap (finish reason `length`)."""
    from pydantic_ai.exceptions import OutputTokenLimitExceeded

    if isinstance(exc, OutputTokenLimitExceeded):
        return True
    # A text answer cut at the cap is retried as text by pydantic-ai; the step fails on the retries after it,
    # each cut again when the model never ends its turn: what counts is how the last response ended.
    responses = [message for message in messages if message.kind == "response"]
    return bool(responses) and getattr(responses[-1], "finish_reason", None) == "length"


def _last_retry_reason(messages: list[Any]) -> str | None:
    """What pydantic-ai last told the model was wrong (schema errors, unknown tool, plain text)."""
    for message in reversed(messages):
        for part in reversed(getattr(message, "parts", ())):
            kind = getattr(part, "part_kind", "")
            retried_tool = kind == "tool-return" and getattr(part, "outcome", None) == "retried"
            if kind not in ("retry-prompt", "retry-feedback") and not retried_tool:
                continue
            content = part.content
            if isinstance(content, list):
                details = "; ".join(
                    f"{'.'.join(map(str, error.get('loc', ()))) or 'arguments'}: {error.get('msg', '')}"
                    for error in content[:3]
                )
            else:
                details = str(content).splitlines()[0] if str(content) else ""
            tool_name = getattr(part, "tool_name", None)
            where = f"`{tool_name}` " if tool_name else ""
            return f"{where}{details}"[:300]
    return None


def _block_key(step: StepContext) -> tuple[Any, ...]:
    return (step.step_id, step.allowed_outcomes, tuple(step.raise_types))


def _direct_excluded(agent: Any) -> bool:
    """Whether steps must run through the agent from the start: pydantic-ai's own spans were asked for."""
    from pydantic_ai import Agent

    return getattr(agent, "_instrument", None) is not None or getattr(Agent, "_instrument_default", True) is not False


def __getattr__(name: str) -> Any:
    # Still importable from here, where they were, without loading their modules with the executor.
    if name in ("OUTCOME_RETRIES", "TOOL_RETRIES"):
        from . import _step_agent

        return getattr(_step_agent, name)
    if name == "check_credentials":
        from ._provider_models import check_credentials

        return check_credentials
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
