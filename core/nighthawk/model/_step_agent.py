"""The pydantic-ai agent a step runs: the `nh_eval` and `nh_assign` tools, the user tools wrapped like them,
the outcome as the output tool, and the check an outcome passes before the step takes it.

The executor (`executor.py`) builds one agent per outcome signature and runs steps with it; a first round
made without the agent (`_direct.py`) calls the same tools and check, so both ways behave alike. pydantic-ai
and the step's tool machinery are imported by the functions here, on the first step, not at import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ExecutionError, OversightRejectedError
from ..step._context import StepContext
from ..step._outcome_schema import OUTCOME_TOOL, outcome_object

__all__ = ["OUTCOME_RETRIES", "TOOL_RETRIES", "StepAgent", "build_agent", "output_spec", "user_tool"]

OUTCOME_RETRIES = 2
"""Corrective retries a model gets for an invalid outcome (bad JSON, wrong keys, failing `return_expression`)."""

TOOL_RETRIES = 2
"""Retries for tool calls whose arguments do not match the tool's schema."""

_FAILURE_PREFIX = '{"value": null, "error": {'  # how every failed tool envelope starts (tools._failure)


def output_spec(schema: Mapping[str, object]) -> Any:
    from pydantic_ai import StructuredDict, ToolOutput

    return ToolOutput(
        StructuredDict(dict(schema)),
        name=OUTCOME_TOOL,
        description="End the step.",
        max_retries=OUTCOME_RETRIES,
    )


@dataclass(frozen=True)
class StepAgent:
    """The agent for one outcome signature, with its tools and outcome check (a first round made without the
    agent calls them too, see `_direct`)."""

    agent: Any
    tools: dict[str, Callable[..., Any]]
    check_outcome: Callable[..., Any]


def build_agent(output_spec: list[Any]) -> StepAgent:
    """The agent for one outcome signature: the Nighthawk tools, `output_spec` as its output tool, the outcome check."""
    from pydantic_ai import Agent, RunContext, Tool

    nh_eval, nh_assign = _nighthawk_tools()
    check_outcome = _outcome_check()
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
    agent.output_validator(check_outcome)
    return StepAgent(agent, {"nh_eval": nh_eval, "nh_assign": nh_assign}, check_outcome)


def _nighthawk_tools() -> tuple[Callable[..., Awaitable[str]], Callable[..., Awaitable[str]]]:
    """The `nh_eval` and `nh_assign` tools, as pydantic-ai calls them (a replayed round answers from its record)."""
    from pydantic_ai import RunContext

    from ..answers.tools import assign_value, eval_expression, evaluated_value, guarded, invoke_tool
    from ..prompting._media import tool_result_media  # hashlib (see the note at the top)
    from ._direct import replayed_result

    # Short docstrings: they become the tool descriptions, sent with every request.
    async def nh_eval(ctx: RunContext[StepContext], expression: str) -> str:
        """Evaluate a Python expression (objects may be changed in place)."""
        step = _enter_round(ctx)
        made = replayed_result(ctx)
        if made is not None:
            return made
        results: list[object] = []

        async def evaluate() -> object:
            results.append(await eval_expression(step, expression))
            return results[-1]

        envelope = _hold_back_outcome(
            ctx, await invoke_tool(step, "nh_eval", {"expression": expression}, evaluate, ctx.tool_call_id or "")
        )
        # An image or document the expression yields (`plt.gcf()`) goes back as media after the envelope.
        if not results:
            return envelope
        from ..threads._loop import on_user_thread  # here, not at the top: `import nighthawk` stays free of asyncio

        value, limit = evaluated_value(results[0]), step.rendering.limits.media_max_bytes
        if type(value).__module__ == "builtins":  # bytes, or no media at all: no user code runs
            media = tool_result_media(value, max_bytes=limit)
        else:  # a figure or an image draws itself: user code, on the user's thread, under the step's guards
            media = await on_user_thread(lambda: guarded(step, "nh_eval", lambda: tool_result_media(value, max_bytes=limit)))
        return envelope if media is None else [envelope, media]  # type: ignore[return-value]

    async def nh_assign(ctx: RunContext[StepContext], target_path: str, expression: str) -> str:
        """Set `name` or `name.attr` to a Python expression's value."""
        step = _enter_round(ctx)
        made = replayed_result(ctx)
        if made is not None:
            return made
        arguments = {"target_path": target_path, "expression": expression}
        envelope = await invoke_tool(
            step, "nh_assign", arguments, lambda: assign_value(step, target_path, expression), ctx.tool_call_id or ""
        )
        return _hold_back_outcome(ctx, envelope)

    return nh_eval, nh_assign


def _outcome_check() -> Callable[..., Awaitable[Any]]:
    """The check an outcome passes before the step takes it: the rest of its response, the writes a pass left
    unset, then the outcome resolved (a failure the model may fix becomes its retry)."""
    from pydantic_ai import ModelRetry, RunContext

    from ..answers.outcome import resolve_outcome  # here: it imports pydantic
    from ..secrets._scrubber import scrub_exception
    from ..step._evaluate import clip
    from ._direct import replayed_retry

    async def check_outcome(ctx: RunContext[StepContext], outcome: Any) -> Any:
        step = _enter_round(ctx)
        retry = replayed_retry(ctx)
        if retry is not None:
            raise retry
        problem = _response_problem(ctx, step)
        if problem is not None:
            step.outcome_problem = problem
            raise ModelRetry(problem)
        if step.tool_error_round == step.model_round:
            step.outcome_problem = "a tool call in the same response failed"
            raise ModelRetry("A tool call in the same response failed; read its error, fix it, then finish again.")
        chosen = outcome_object(outcome)
        kind = chosen.get("kind") if isinstance(chosen, dict) else getattr(chosen, "kind", None)
        unset = step.unset_writes() if kind == "pass" else ()
        if unset and not step.reminded_unset:
            # One reminder only: the spec lets a block leave a write binding unset, so a second pass stands.
            step.reminded_unset = True
            names = ", ".join(f"<:{name}>" for name in unset)
            step.outcome_problem = f"the pass left {names} unset"
            raise ModelRetry(
                f"You passed without setting {names}. Set it with nh_assign and finish again; pass again only if "
                "it must stay unset."
            )
        try:
            step.resolution = await resolve_outcome(outcome, step)
        except OversightRejectedError:
            raise  # oversight stopped the step: not a mistake for the model to retry
        except ExecutionError as exc:
            # Scrubbed here, cause chain included, and not only on the way to the model: pydantic-ai's own
            # tracing records the retry and the exception before the model wrapper sees anything.
            scrub_exception(exc)
            step.outcome_problem = clip(str(exc))
            raise ModelRetry(step.outcome_problem) from exc
        # The runner takes this resolution as is: the outcome it returns is the one that was evaluated,
        # so `return_expression` runs exactly once.
        return step.resolution.outcome

    return check_outcome


def _response_calls(ctx: Any) -> list[Any]:
    """The tool calls of the model response being processed, in the order sent."""
    for message in reversed(ctx.messages):
        if getattr(message, "kind", "") == "response":
            return [part for part in message.parts if getattr(part, "part_kind", "") == "tool-call"]
    return []


def _response_problem(ctx: Any, step: StepContext) -> str | None:
    """Why an outcome cannot be honoured given the rest of its response (several outcomes, unknown tools)."""
    calls = _response_calls(ctx)
    outcomes = sum(1 for call in calls if call.tool_name == OUTCOME_TOOL)
    if outcomes > 1:
        return f"{outcomes} {OUTCOME_TOOL} calls in one response; none was applied. Finish with exactly one outcome."
    known = {"nh_eval", "nh_assign", OUTCOME_TOOL, *step.tools, *step.tool_scope.tools}
    unknown = sorted({call.tool_name for call in calls} - known)
    if unknown:
        return (
            f"unknown tool(s) {', '.join(map(repr, unknown))} in the same response; the outcome was held back. "
            "Use only the tools offered, then finish again."
        )
    return None


def _hold_back_outcome(ctx: Any, envelope: str) -> str:
    """Fail the round when a tool sent after the outcome in the same response failed.

    pydantic-ai runs such a tool after it has accepted the outcome; raising `ModelRetry` makes it drop
    the outcome, so the model sees the error and finishes again (as it does for a failure before it).
    """
    if not envelope.startswith(_FAILURE_PREFIX):
        return envelope
    from pydantic_ai import ModelRetry

    for call in _response_calls(ctx):
        if call.tool_call_id == ctx.tool_call_id:
            return envelope
        if call.tool_name == OUTCOME_TOOL:
            ctx.deps.outcome_problem = "a tool call sent after the outcome failed"
            raise ModelRetry(f"This call came after your outcome and failed, so the outcome was not applied: {envelope}")
    return envelope


def _enter_round(ctx: Any) -> StepContext:
    step: StepContext = ctx.deps
    step.model_round = ctx.run_step
    return step


def user_tool(definition: Any) -> Any:
    """Wrap a user tool so its calls go through the envelope and the event stream like built-in ones."""
    import functools
    import inspect

    from pydantic_ai import Tool

    from ..answers.tools import invoke_tool  # the oversight hooks (see the note at the top)
    from ..threads._loop import call_user  # here, not at the top: `import nighthawk` stays free of asyncio

    function = definition.function

    @functools.wraps(function)
    async def call(ctx: Any, *args: Any, **kwargs: Any) -> str:
        step = _enter_round(ctx)
        envelope = await invoke_tool(
            step, definition.name, kwargs, lambda: call_user(function, ctx, *args, **kwargs), ctx.tool_call_id or ""
        )
        return _hold_back_outcome(ctx, envelope)

    call.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return Tool(
        call,
        takes_ctx=True,
        name=definition.name,
        description=definition.description,
        metadata=dict(definition.metadata) if definition.metadata else None,
        max_retries=TOOL_RETRIES,
    )
