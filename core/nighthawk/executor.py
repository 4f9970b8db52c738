"""Stage 4, the executor: turn a step into an outcome.

`StepExecutor` is the protocol; `AgentStepExecutor` runs a pydantic-ai agent loop with the `nh_eval` and
`nh_assign` tools, the user tools in scope, and one output tool per allowed outcome kind. pydantic-ai is
imported on first use, so constructing an executor (or importing nighthawk) needs no provider, key or network.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from . import events
from .configuration import StepExecutorConfiguration
from .errors import ExecutionError, NighthawkError
from .tools import assign_value, eval_expression, invoke_tool, visible_tools

if TYPE_CHECKING:
    from .outcome import Outcome
    from .step import StepContext

__all__ = ["OUTCOME_RETRIES", "TOOL_RETRIES", "AgentStepExecutor", "StepExecutor", "check_credentials"]

OUTCOME_RETRIES = 2
"""Corrective retries a model gets for an invalid outcome (bad JSON, wrong keys, failing `return_expression`)."""

TOOL_RETRIES = 2
"""Retries for tool calls whose arguments do not match the tool's schema."""

# Environment variable each provider prefix reads its key from, for a message before any request is made.
_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GEMINI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
}


@runtime_checkable
class StepExecutor(Protocol):
    """Anything that can finish a step: read the step, use the tools on it, return an outcome."""

    async def run_step(self, step: StepContext) -> Outcome:
        """Execute the step and return its (unchecked) outcome; the runner validates and evaluates it."""
        ...


class AgentStepExecutor:
    """A step executor backed by a pydantic-ai agent.

    Build it with `AgentStepExecutor.from_configuration(configuration=StepExecutorConfiguration(...))`. The
    model is a `provider:model` string, resolved on the first step, or a pydantic-ai `Model` instance
    (for example `FunctionModel` or `TestModel` in tests).
    """

    def __init__(self, configuration: StepExecutorConfiguration | None = None) -> None:
        self._configuration = configuration or StepExecutorConfiguration()
        self._agents: dict[tuple[tuple[str, ...], tuple[str, ...]], Any] = {}
        self._model: Any = None

    @classmethod
    def from_configuration(cls, *, configuration: StepExecutorConfiguration) -> AgentStepExecutor:
        """Build an executor; nothing is contacted until the first step."""
        return cls(configuration)

    @property
    def configuration(self) -> StepExecutorConfiguration:
        return self._configuration

    def with_configuration(self, configuration: StepExecutorConfiguration) -> AgentStepExecutor:
        """A new executor with another configuration (the same model instance when the model is unchanged)."""
        executor = AgentStepExecutor(configuration)
        if configuration.model == self._configuration.model:
            executor._model = self._model
        return executor

    @property
    def model_label(self) -> str:
        """A readable name of the model for displays and logs."""
        model = self._configuration.model
        if isinstance(model, str):
            return model
        return f"{getattr(model, 'system', type(model).__name__)}:{getattr(model, 'model_name', '?')}"

    def __repr__(self) -> str:
        return f"AgentStepExecutor(model={self.model_label!r})"

    # --- model and agent, built once -------------------------------------------------------------

    def _resolve_model(self) -> Any:
        if self._model is not None:
            return self._model
        model = self._configuration.model
        if isinstance(model, str):
            check_credentials(model)
            from pydantic_ai.exceptions import UserError
            from pydantic_ai.models import infer_model

            try:
                model = infer_model(model)
            except (UserError, ImportError, ValueError) as exc:
                raise NighthawkError(
                    f"cannot use `model` {self._configuration.model!r}: {exc}. Choose another with "
                    "`StepExecutorConfiguration(model='provider:model')` or, in a notebook, `%nighthawk model ...`"
                ) from exc
        self._model = model
        return model

    def _get_agent(self, allowed: tuple[str, ...], raise_types: tuple[str, ...]) -> Any:
        # pydantic-ai fixes the output tools when an agent has an output validator, so there is one agent
        # per outcome signature; a notebook or program uses a handful.
        key = (allowed, raise_types)
        agent = self._agents.get(key)
        if agent is None:
            agent = self._agents[key] = _build_agent(_output_spec(allowed, raise_types))
        return agent

    # --- one step ---------------------------------------------------------------------------------

    async def run_step(self, step: StepContext) -> Outcome:
        """Run the model loop for `step` and return the outcome it settled on (already resolved on `step`)."""
        from pydantic_ai import capture_run_messages
        from pydantic_ai.exceptions import AgentRunError, ModelAPIError, ModelHTTPError, UnexpectedModelBehavior
        from pydantic_ai.toolsets import FunctionToolset

        from .prompt import render_prompts

        model = self._resolve_model()
        agent = self._get_agent(step.allowed_outcomes, tuple(step.raise_types))
        system_prompt, user_prompt = render_prompts(step, self._configuration)
        if events.listening():
            events.emit(
                events.PromptRendered(
                    invocation_id=step.invocation_id, system_prompt=system_prompt, user_prompt=user_prompt
                )
            )
        user_tools = {**visible_tools(), **step.tool_scope.tools}
        toolsets = [FunctionToolset([_user_tool(definition) for definition in user_tools.values()])] if user_tools else None
        with capture_run_messages() as messages:
            try:
                result = await agent.run(
                    user_prompt,
                    model=model,
                    deps=step,
                    instructions=system_prompt,
                    model_settings=dict(self._configuration.model_settings or {}) or None,
                    toolsets=toolsets,
                )
            except ModelHTTPError as exc:
                body = str(exc.body)[:300] if exc.body is not None else ""
                raise ExecutionError(
                    f"the model provider answered HTTP {exc.status_code} ({exc.model_name}): {body}"
                ) from exc
            except UnexpectedModelBehavior as exc:
                problem = step.outcome_problem or _last_retry_reason(messages)
                reason = f"; last problem: {problem}" if problem else ""
                raise ExecutionError(
                    f"the model did not end the step with a valid outcome ({exc.message}){reason}"
                ) from exc
            except (ModelAPIError, AgentRunError) as exc:
                raise ExecutionError(f"the model request failed: {exc}") from exc
        usage = result.usage
        step.usage = {
            "requests": usage.requests,
            "input_tokens": usage.input_tokens or 0,
            "output_tokens": usage.output_tokens or 0,
        }
        return result.output


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


def check_credentials(model: str) -> None:
    """Fail before any network call when a `provider:model` string's API key is missing from the environment.

    Raises:
        NighthawkError: The key's environment variable is unset.
    """
    provider = model.split(":", 1)[0]
    variable = _KEY_VARIABLES.get(provider)
    if variable is None or os.environ.get(variable):
        return
    if provider.startswith("openai") and os.environ.get("OPENAI_BASE_URL"):
        return  # an OpenAI-compatible server (local or proxy) may need no key
    raise NighthawkError(
        f"`model` {model!r} needs an API key in the environment variable `{variable}`, which is not set. "
        f"Set it (for example `export {variable}=...`), or choose another model with "
        "`StepExecutorConfiguration(model='provider:model')` (in a notebook: `%nighthawk model provider:model`)."
    )


def _output_spec(allowed: tuple[str, ...], raise_types: tuple[str, ...]) -> list[Any]:
    from pydantic_ai import ToolOutput

    from .outcome import outcome_models

    return [
        ToolOutput(model, name=f"nh_{kind}", max_retries=OUTCOME_RETRIES)  # the model's docstring describes it
        for kind, model in zip(allowed, outcome_models(allowed, raise_types), strict=True)
    ]


def _build_agent(output_spec: list[Any]) -> Any:
    from pydantic_ai import Agent, ModelRetry, RunContext, Tool

    from .outcome import resolve_outcome
    from .step import StepContext

    async def nh_eval(ctx: RunContext[StepContext], expression: str) -> str:
        """Evaluate a Python expression against the step's variables and return its value.

        Args:
            expression: One Python expression.
        """
        step = _enter_round(ctx)
        return await invoke_tool(
            step, "nh_eval", {"expression": expression}, lambda: eval_expression(step, expression), ctx.tool_call_id or ""
        )

    async def nh_assign(ctx: RunContext[StepContext], target_path: str, expression: str) -> str:
        """Evaluate a Python expression and store its value in a variable or attribute.

        Args:
            target_path: `name` or `name.attr` (plain identifiers).
            expression: One Python expression.
        """
        step = _enter_round(ctx)
        arguments = {"target_path": target_path, "expression": expression}
        return await invoke_tool(
            step, "nh_assign", arguments, lambda: assign_value(step, target_path, expression), ctx.tool_call_id or ""
        )

    # This module uses postponed annotations; pydantic-ai reads tool signatures, so give it real types.
    for function in (nh_eval, nh_assign):
        function.__annotations__ = {**function.__annotations__, "ctx": RunContext[StepContext]}
        function.__annotations__.update(
            {name: str for name, hint in function.__annotations__.items() if hint == "str"}
        )

    agent: Any = Agent(
        output_type=output_spec,
        deps_type=StepContext,
        tools=[Tool(nh_eval, takes_ctx=True, max_retries=TOOL_RETRIES), Tool(nh_assign, takes_ctx=True, max_retries=TOOL_RETRIES)],
        retries={"tools": TOOL_RETRIES, "output": OUTCOME_RETRIES},
        defer_model_check=True,
    )

    @agent.output_validator
    async def check_outcome(ctx: RunContext[StepContext], outcome: Any) -> Any:
        step = _enter_round(ctx)
        if step.tool_error_round == step.model_round:
            step.outcome_problem = "a tool call in the same response failed"
            raise ModelRetry("A tool call in the same response failed; read its error, fix it, then finish again.")
        try:
            step.resolution = await resolve_outcome(outcome, step)
        except ExecutionError as exc:
            step.outcome_problem = str(exc)
            raise ModelRetry(str(exc)) from exc
        return outcome

    return agent


def _enter_round(ctx: Any) -> StepContext:
    step: StepContext = ctx.deps
    step.model_round = ctx.run_step
    return step


def _user_tool(definition: Any) -> Any:
    """Wrap a user tool so its calls go through the envelope and the event stream like built-in ones."""
    import functools
    import inspect

    from pydantic_ai import Tool

    function = definition.function

    @functools.wraps(function)
    async def call(ctx: Any, *args: Any, **kwargs: Any) -> str:
        step = _enter_round(ctx)
        return await invoke_tool(
            step, definition.name, kwargs, lambda: function(ctx, *args, **kwargs), ctx.tool_call_id or ""
        )

    call.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return Tool(
        call,
        takes_ctx=True,
        name=definition.name,
        description=definition.description,
        metadata=dict(definition.metadata) if definition.metadata else None,
        max_retries=TOOL_RETRIES,
    )

