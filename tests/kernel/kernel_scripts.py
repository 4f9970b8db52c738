"""Scripted pydantic-ai models for the kernel extension tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["assign", "outcome", "scripted", "step_events"]

Script = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def scripted(*responses: list[ToolCallPart]) -> FunctionModel:
    """A model that answers the n-th request with the n-th list of tool calls."""

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests = sum(1 for message in messages if message.kind == "request")
        return ModelResponse(parts=list(responses[min(requests, len(responses)) - 1]))

    return FunctionModel(script, model_name="scripted")


def assign(target: str, expression: str) -> ToolCallPart:
    return ToolCallPart("nh_assign", {"target_path": target, "expression": expression})


def outcome(kind: str, **fields: str) -> ToolCallPart:
    return ToolCallPart("nh_outcome", {"kind": kind, **fields})


def step_events(invocation_id: str = "step-1", *, calls: int = 1, parent: str | None = None, status: str = "completed") -> list[Any]:
    """The events of one synthetic step with `calls` tool calls (for display tests without a model)."""
    from nighthawk import events

    started = events.StepStarted(
        step_id="In[1]:2",
        invocation_id=invocation_id,
        parent_invocation_id=parent,
        run_id="run",
        scope_id="scope",
        program="Sum <values> into <:total>.",
        model="test:scripted",
        allowed_outcomes=("pass", "return", "raise"),
    )
    body: list[Any] = [
        events.PromptRendered(invocation_id=invocation_id, system_prompt="SYSTEM", user_prompt="USER <values>")
    ]
    for index in range(calls):
        call_id = f"call-{index}"
        body.append(events.ToolCallStarted(invocation_id=invocation_id, call_id=call_id, tool_name="nh_eval", arguments=f'{{"expression":"{index} + 1"}}'))
        body.append(events.ToolCallFinished(invocation_id=invocation_id, call_id=call_id, tool_name="nh_eval", result=str(index + 1), error_kind=None, error_message=None, duration_s=0.001))
    body += [
        events.OutcomeReached(invocation_id=invocation_id, kind="pass"),
        events.UsageReported(invocation_id=invocation_id, requests=2, input_tokens=100, output_tokens=20),
        events.Committed(
            invocation_id=invocation_id,
            names=("total",),
            changes=(events.LocalsChange(name="total", change="added", before=None, after="6", committed=True),),
        ),
        events.StepFinished(invocation_id=invocation_id, status=status, duration_s=0.25),
    ]
    return [started, *body]
