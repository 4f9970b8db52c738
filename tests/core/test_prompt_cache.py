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

    import nighthawk.model.executor

    reported = []
    record = nighthawk.model.executor.record_usage
    monkeypatch.setattr(nighthawk.model.executor, "record_usage", lambda usage, **kw: (reported.append(usage), record(usage, **kw)))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        finish = ToolCallPart("nh_outcome", {"outcome": {"kind": "return", "return_expression": "code"}})
        return ModelResponse(parts=[finish], usage=RequestUsage(input_tokens=2_000, cache_read_tokens=1_800, output_tokens=20))

    executor = nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=FunctionModel(model)))
    with nh.run(executor):
        label("SKU-0001")
    (usage,) = reported
    assert (usage.input_tokens, usage.cache_read_tokens) == (2_000, 1_800)


def cached_model() -> FunctionModel:
    from pydantic_ai.usage import RequestUsage

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        finish = ToolCallPart("nh_outcome", {"outcome": {"kind": "return", "return_expression": "code"}})
        return ModelResponse(parts=[finish], usage=RequestUsage(input_tokens=2_000, cache_read_tokens=1_800, output_tokens=20))

    return FunctionModel(model, model_name="cached")


def test_a_budget_group_sums_the_cached_input_tokens_of_its_steps() -> None:
    with nh.run(nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=cached_model()))), nh.budget() as group:
        label("SKU-0001")
        label("SKU-0002")
    assert (group.spent.input_tokens, group.spent.cache_read_tokens) == (4_000, 3_600)


def test_the_usage_event_carries_the_cached_input_tokens() -> None:
    from nighthawk import events

    seen: list[events.Event] = []
    with nh.run(nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=cached_model()))), events.listen(seen.append):
        label("SKU-0001")
    (usage,) = [event for event in seen if isinstance(event, events.UsageReported)]
    assert usage.cache_read_tokens == 1_800


def test_the_session_ledger_and_a_run_meter_count_the_cached_input_tokens() -> None:
    nh.session_usage().reset()
    meter = nh.UsageMeter()
    with nh.run(nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=cached_model())), usage_meter=meter):
        label("SKU-0001")
    (totals,) = nh.session_usage().by_model().values()
    assert totals.cache_read_tokens == 1_800
    assert meter.totals().cache_read_tokens == 1_800
    assert meter.snapshot().cache_read_tokens == 1_800


def test_a_map_progress_line_says_how_many_input_tokens_were_cached(capsys) -> None:
    with nh.run(nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=cached_model()))):
        nh.map(label, ["SKU-0001", "SKU-0002"], progress=True)
    line = capsys.readouterr().err.rstrip("\n").split("\r")[-1]
    assert "4,040 tokens (3,600 cached)" in line
