"""Every request carries an output cap (`max_tokens`), and a response cut at it is reported as such."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh


@nh.natural_function
def summarise(text: str) -> str:
    """natural
    Return a one-line summary of <text>.
    """


def run_with(respond, **configuration) -> list[AgentInfo]:
    seen: list[AgentInfo] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return respond(messages, info)

    executor = nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=FunctionModel(model), **configuration))
    with nh.run(executor):
        summarise("a long story")
    return seen


def finish(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"outcome": {"kind": "return", "return_expression": "'short'"}})])


def rambling(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("and then " * 50)], finish_reason="length")


def cut_tool_call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_outcome", '{"outcome": {"kind": "return", "return_exp')], finish_reason="length")


def test_every_request_carries_the_default_output_cap() -> None:
    (info,) = run_with(finish)
    assert info.model_settings is not None
    assert info.model_settings.get("max_tokens") == 4_096
    from nighthawk.configuration import DEFAULT_MAX_OUTPUT_TOKENS  # the documented default

    assert DEFAULT_MAX_OUTPUT_TOKENS == 4_096


def test_model_settings_override_the_output_cap() -> None:
    (info,) = run_with(finish, model_settings={"max_tokens": 300})
    assert info.model_settings["max_tokens"] == 300


def test_a_text_answer_cut_at_the_cap_is_reported_with_the_cap_and_the_fix() -> None:
    with pytest.raises(nh.ExecutionError) as caught:
        run_with(rambling)
    message = str(caught.value)
    assert "the model's answer was cut at 4096 tokens" in message
    assert "model_settings={'max_tokens'" in message


def test_a_tool_call_cut_at_the_cap_is_reported_with_the_cap_the_user_set() -> None:
    with pytest.raises(nh.ExecutionError, match="the model's answer was cut at 250 tokens"):
        run_with(cut_tool_call, model_settings={"max_tokens": 250})
