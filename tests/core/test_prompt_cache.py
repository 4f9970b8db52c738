"""A map's prompts share the longest prefix, and requests carry the providers' prompt-cache settings."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh

catalogue = {f"SKU-{i:04d}": f"product number {i} in the spring catalogue" for i in range(300)}


@nh.natural_function
def label(code: str) -> str:
    """natural
    Return the <catalogue> entry for <code>, upper-cased.
    """


def first_requests(codes: list[str], **configuration) -> list[tuple[str, AgentInfo]]:
    seen: list[tuple[str, AgentInfo]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((str(messages[0].parts[-1].content), info))
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"outcome": {"kind": "return", "return_expression": "code"}})])

    executor = nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=FunctionModel(model), **configuration))
    with nh.run(executor):
        for code in codes:
            label(code)
    return seen


def shared_prefix(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return length


def test_a_global_read_by_the_block_is_listed_before_the_arguments_whatever_their_names() -> None:
    (first, _), _ = first_requests(["SKU-0001", "SKU-0002"])
    assert first.index("catalogue: dict") < first.index("code: str")


def test_the_globals_summary_comes_before_the_locals_so_calls_share_it() -> None:
    (first, _), (second, _) = first_requests(["SKU-0001", "SKU-0002"])
    assert first.index("<<<NH:GLOBALS>>>") < first.index("<<<NH:LOCALS>>>")
    assert shared_prefix(first, second) >= first.index("<<<NH:END_GLOBALS>>>")


def test_two_calls_of_a_function_share_at_least_95_percent_of_their_first_prompt() -> None:
    (first, _), (second, _) = first_requests(["SKU-0001", "SKU-0002"])
    assert shared_prefix(first, second) >= 0.95 * len(second)


def test_requests_set_anthropic_cache_points_and_a_stable_openai_cache_key_per_block() -> None:
    (_, first), (_, second) = first_requests(["SKU-0001", "SKU-0002"])
    settings = first.model_settings or {}
    assert settings.get("anthropic_cache_tool_definitions") is True
    assert settings.get("anthropic_cache_instructions") is True
    assert settings.get("openai_prompt_cache_key", "").startswith("nighthawk:")
    assert settings["openai_prompt_cache_key"] == (second.model_settings or {}).get("openai_prompt_cache_key")


def test_model_settings_override_the_cache_key() -> None:
    ((_, info),) = first_requests(["SKU-0001"], model_settings={"openai_prompt_cache_key": "mine"})
    assert (info.model_settings or {}).get("openai_prompt_cache_key") == "mine"


def test_cached_input_tokens_the_provider_reports_show_in_the_step_usage(monkeypatch) -> None:
    from pydantic_ai.usage import RequestUsage

    import nighthawk.executor

    reported = []
    record = nighthawk.executor.record_usage
    monkeypatch.setattr(nighthawk.executor, "record_usage", lambda usage, **kw: (reported.append(usage), record(usage, **kw)))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        finish = ToolCallPart("nh_outcome", {"outcome": {"kind": "return", "return_expression": "code"}})
        return ModelResponse(parts=[finish], usage=RequestUsage(input_tokens=2_000, cache_read_tokens=1_800, output_tokens=20))

    executor = nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=FunctionModel(model)))
    with nh.run(executor):
        label("SKU-0001")
    (usage,) = reported
    assert (usage.input_tokens, usage.cache_read_tokens) == (2_000, 1_800)
