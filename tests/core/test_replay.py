"""`nighthawk.replay`: record exchanges through a wrapped model, replay them without it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import ToolDefinition

import nighthawk as nh
from nighthawk import events
from nighthawk.replay import (
    Exchange,
    ReplayMissError,
    ReplayModel,
    ReplayStore,
    canonical_request,
    replay_executor,
    replaying,
    request_digest,
)
from scripting import Script, call, finish

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


def assign(target: str, expression: str) -> ToolCallPart:
    return call("nh_assign", target_path=target, expression=expression)


@nh.natural_function
def tripled(x: int) -> int:
    """natural
    Look at <x>, set <:y> to three times it, then <:z> to y + 1; return y + z.
    """


def three_rounds() -> list[list[ToolCallPart]]:
    """Two tool rounds (the first with two calls), then the outcome: exercises call id bookkeeping."""
    return [
        [call("nh_eval", expression="x"), assign("y", "x * 3")],
        [assign("z", "y + 1")],
        [finish("return", return_expression="y + z")],
    ]


def script_executor(script: Script, path: Path, mode: str) -> nh.AgentStepExecutor:
    return replay_executor(path, mode, model=FunctionModel(script))  # type: ignore[arg-type]


def unreachable(messages, info) -> ModelResponse:
    raise AssertionError("replay mode must not ask the wrapped model")


@pytest.fixture(autouse=True)
def _mode_from_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NIGHTHAWK_REPLAY_MODE", raising=False)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "module.replay.yaml"


@pytest.fixture
def recorded(store_path: Path) -> Iterator[Path]:
    """A store holding one run of `tripled(2)`."""
    with nh.run(script_executor(Script(three_rounds()), store_path, "record")):
        assert tripled(2) == 13
    yield store_path


# --- record and replay -------------------------------------------------------------------------------


def test_record_stores_one_exchange_per_model_request(recorded: Path) -> None:
    store = ReplayStore(recorded)
    assert [exchange.round for exchange in store.exchanges] == [1, 2, 3]


def test_replay_answers_from_the_store_without_a_wrapped_model(recorded: Path) -> None:
    with nh.run(replay_executor(recorded, "replay")):
        assert tripled(2) == 13


def test_replay_never_asks_the_wrapped_model(recorded: Path) -> None:
    with nh.run(replay_executor(recorded, "replay", model=FunctionModel(unreachable))):
        assert tripled(2) == 13


def test_replayed_tool_call_ids_stay_consistent_across_rounds(recorded: Path) -> None:
    seen: list[events.Event] = []
    with events.listen(seen.append), nh.run(replay_executor(recorded, "replay")):
        tripled(2)
    call_ids = [e.call_id for e in seen if isinstance(e, events.ToolCallStarted)]
    assert call_ids == ["call_1", "call_2", "call_3"]


def test_replayed_usage_is_the_recorded_usage(recorded: Path) -> None:
    def usage_of(executor: nh.AgentStepExecutor) -> tuple[int, int, int]:
        seen: list[events.Event] = []
        with events.listen(seen.append), nh.run(executor):
            tripled(2)
        (usage,) = [e for e in seen if isinstance(e, events.UsageReported)]
        return usage.requests, usage.input_tokens, usage.output_tokens

    recorded_usage = usage_of(script_executor(Script(three_rounds()), recorded.with_name("again.yaml"), "record"))
    assert usage_of(replay_executor(recorded, "replay")) == recorded_usage
    assert recorded_usage[0] == 3 and recorded_usage[1] > 0


def test_changed_data_is_a_miss_that_names_the_block_and_shows_the_difference(recorded: Path) -> None:
    with nh.run(replay_executor(recorded, "replay")):
        with pytest.raises(ReplayMissError, match=r"(?s)no answer for block '.*:\d+', round 1.*-\s+x: int = 2\n\+\s+x: int = 5"):
            tripled(5)


def test_a_block_with_a_user_tool_replays(store_path: Path) -> None:
    def run(executor: nh.AgentStepExecutor) -> int:
        with nh.run(executor):

            @nh.tool
            def offset(ctx, value: int) -> int:
                """Add the house offset to a value."""
                return value + 100

            return tripled(2)

    rounds = [[call("offset", value=2)], [assign("y", "6"), assign("z", "7")], [finish("return", return_expression="y + z")]]
    assert run(script_executor(Script(rounds), store_path, "record")) == 13
    assert run(replay_executor(store_path, "replay")) == 13


def test_changed_tools_are_a_miss(recorded: Path) -> None:
    with nh.run(replay_executor(recorded, "replay")):
        with nh.scope():

            @nh.tool
            def lookup(ctx, key: str) -> str:
                """Look a key up."""
                return key

            with pytest.raises(ReplayMissError, match=r"\n\+- name: lookup\n"):
                tripled(2)


def test_changed_settings_are_a_miss(recorded: Path) -> None:
    configuration = nh.StepExecutorConfiguration(model_settings={"temperature": 0.5})
    with nh.run(replay_executor(recorded, "replay", configuration=configuration)):
        with pytest.raises(ReplayMissError, match=r"(?s)\+\s+temperature: 0.5"):
            tripled(2)


def test_miss_on_a_missing_store_says_it_is_empty(store_path: Path) -> None:
    with nh.run(replay_executor(store_path, "replay")):
        with pytest.raises(ReplayMissError, match=r"is empty or missing, so it has no answer for block"):
            tripled(2)


def test_miss_fails_the_block_without_commit(recorded: Path) -> None:
    @nh.natural_function
    def keep() -> int:
        y = 7
        try:
            """natural
            Set <:y> to something new.
            """
        except ReplayMissError:
            pass
        return y

    with nh.run(replay_executor(recorded, "replay")):
        assert keep() == 7


def test_auto_mode_replays_hits_and_records_misses(recorded: Path) -> None:
    script = Script(three_rounds())
    with nh.run(script_executor(script, recorded, "auto")):
        assert tripled(2) == 13
        assert script.requests == 0
        assert tripled(4) == 4 * 3 + 4 * 3 + 1
    assert script.requests == 3
    assert len(ReplayStore(recorded)) == 6


def test_record_mode_asks_the_wrapped_model_even_for_a_stored_request(recorded: Path) -> None:
    script = Script(three_rounds())
    with nh.run(script_executor(script, recorded, "record")):
        tripled(2)
    assert script.requests == 3
    assert len(ReplayStore(recorded)) == 3


def test_record_without_a_wrapped_model_is_rejected(store_path: Path) -> None:
    with pytest.raises(nh.NighthawkError, match=r"replay `mode` 'record' records, so it needs a model"):
        ReplayModel(None, store_path, "record")


def test_unknown_mode_is_rejected(store_path: Path) -> None:
    with pytest.raises(nh.NighthawkError, match=r"unknown replay `mode` 'replays'; use one of replay, record, auto"):
        ReplayModel(None, store_path, "replays")  # type: ignore[arg-type]


def test_mode_defaults_to_the_environment_variable(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIGHTHAWK_REPLAY_MODE", "record")
    script = Script(three_rounds())
    with nh.run(replay_executor(store_path, model=FunctionModel(script))):
        tripled(2)
    assert script.requests == 3 and len(ReplayStore(store_path)) == 3


def test_mode_defaults_to_replay_without_the_environment_variable(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NIGHTHAWK_REPLAY_MODE", raising=False)
    assert ReplayModel(None, store_path).mode == "replay"


def test_unknown_mode_in_the_environment_names_the_variable(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIGHTHAWK_REPLAY_MODE", "rec")
    with pytest.raises(nh.NighthawkError, match=r"unknown replay mode 'rec' in `NIGHTHAWK_REPLAY_MODE`"):
        ReplayModel(None, store_path)


def test_record_with_a_model_string_and_no_key_names_the_variable(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with nh.run(replay_executor(store_path, "auto", model="openai-responses:gpt-5.4-nano")):
        with pytest.raises(nh.NighthawkError, match=r"OPENAI_API_KEY"):
            tripled(2)


def test_replay_with_a_model_string_needs_no_key(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with nh.run(replay_executor(recorded, "replay", model="openai-responses:gpt-5.4-nano")):
        assert tripled(2) == 13


# --- scopes ------------------------------------------------------------------------------------------


def test_replaying_scope_wraps_the_model_of_the_executor_in_force(store_path: Path) -> None:
    script = Script(three_rounds())
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(script)))
    with nh.run(executor):
        with replaying(store_path, "record") as inner:
            assert isinstance(inner.configuration.model, ReplayModel)
            tripled(2)
        with replaying(store_path, "replay"):
            assert tripled(2) == 13
    assert script.requests == 3


def test_replaying_scope_refuses_an_executor_without_a_model(recorded: Path) -> None:
    from nighthawk.testing import ScriptedExecutor

    with nh.run(ScriptedExecutor([])):
        with pytest.raises(nh.NighthawkError, match=r"has no model to wrap"):
            with replaying(recorded):
                pass


def test_replaying_scope_without_an_executor_uses_the_default_configuration(recorded: Path) -> None:
    with replaying(recorded) as executor:
        assert executor.configuration.model.model_name == "gpt-5.4-nano"
        assert tripled(2) == 13


# --- the file ----------------------------------------------------------------------------------------


def test_store_file_records_model_authorship_and_versions(recorded: Path) -> None:
    data = yaml.safe_load(recorded.read_text())
    entry = data["exchanges"][0]
    assert data["format"] == 1
    assert entry["model"].startswith("function:")
    assert entry["authored"] is True
    assert entry["created_with"].startswith("nighthawk ")
    assert re.fullmatch(r"(tests\.core\.)?test_replay:\d+", entry["block"])


def test_authored_flag_can_be_set_explicitly(store_path: Path) -> None:
    model = ReplayModel(FunctionModel(Script(three_rounds())), store_path, "record", authored=False)
    with nh.run(nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))):
        tripled(2)
    assert {exchange.authored for exchange in ReplayStore(store_path).exchanges} == {False}


def test_store_file_keeps_instructions_and_tools_once(recorded: Path) -> None:
    text = recorded.read_text()
    assert text.count("You run one step of a Python program") == 1
    assert text.count("- name: nh_assign") == 1


def test_store_file_keeps_prompts_as_readable_line_blocks(recorded: Path) -> None:
    assert "\n          <<<NH:LOCALS>>>\n          x: int = 2\n" in recorded.read_text()


def test_store_file_has_no_volatile_ids_or_timestamps(recorded: Path) -> None:
    text = recorded.read_text()
    assert "pyd_ai_" not in text and "timestamp" not in text and "run_id" not in text


def test_recording_the_same_run_twice_writes_the_same_bytes(recorded: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.replay.yaml"
    with nh.run(script_executor(Script(three_rounds()), again, "record")):
        tripled(2)
    assert again.read_bytes() == recorded.read_bytes()


def test_compacted_file_order_does_not_depend_on_recording_order(tmp_path: Path) -> None:
    def record(path: Path, values: list[int]) -> bytes:
        rounds = [r for _ in values for r in three_rounds()]
        with nh.run(script_executor(Script(rounds), path, "record")):
            for value in values:
                tripled(value)
        ReplayStore(path).compact()
        return path.read_bytes()

    assert record(tmp_path / "a.yaml", [1, 2]) == record(tmp_path / "b.yaml", [2, 1])


def test_two_store_objects_on_one_file_keep_each_others_entries(store_path: Path) -> None:
    parameters = ModelRequestParameters()
    first, second = ReplayStore(store_path), ReplayStore(store_path)
    assert len(first) == len(second) == 0  # both have read the (missing) file
    for store, question in ((first, "a"), (second, "b")):
        store.record_exchange([ModelRequest(parts=[UserPromptPart(question)])], ModelResponse(parts=[TextPart("ok")]), model_request_parameters=parameters)
    assert len(ReplayStore(store_path)) == 2


def test_store_never_contains_keys_or_headers(store_path: Path) -> None:
    @nh.natural_function
    def leak(note: str) -> str:
        """natural
        Summarise <note>.
        """

    script = Script([[finish("return", return_expression=repr(f"Bearer {SECRET}"))]])
    configuration = nh.StepExecutorConfiguration(
        model_settings={"extra_headers": {"Authorization": f"Bearer {SECRET}"}, "temperature": 0.0}
    )
    executor = replay_executor(store_path, "record", model=FunctionModel(script), configuration=configuration)
    with nh.run(executor):
        leak(f"my key is {SECRET}")
    text = store_path.read_text()
    assert SECRET not in text
    assert "extra_headers" not in text and "Authorization" not in text
    assert "<masked>" in text


def test_a_hand_edited_request_still_matches(store_path: Path) -> None:
    with nh.run(script_executor(Script([[finish("return", return_expression="x * 10")]]), store_path, "record")):
        assert tripled(2) == 20
    store_path.write_text(store_path.read_text().replace("x: int = 2\n", "x: int = 9\n"))
    with nh.run(replay_executor(store_path, "replay")):
        assert tripled(9) == 90


def test_unreadable_store_names_the_file(store_path: Path) -> None:
    store_path.write_text("format: 99\nexchanges: []\n")
    with pytest.raises(nh.NighthawkError, match=r"cannot read the replay store '.*module.replay.yaml': `format` is 99"):
        replay_executor(store_path, "replay")


def test_authored_entries_can_be_written_from_python(store_path: Path) -> None:
    parameters = ModelRequestParameters(function_tools=[ToolDefinition(name="lookup", parameters_json_schema={"type": "object"})])
    messages = [ModelRequest(parts=[UserPromptPart("What is 2 + 2?")])]
    store = ReplayStore(store_path)
    exchange = store.record_exchange(messages, ModelResponse(parts=[TextPart("4")]), model_request_parameters=parameters)
    assert exchange.authored and exchange.model == "authored"
    assert ReplayStore(store_path).find(request_digest(messages, None, parameters)) == exchange


# --- canonical requests ------------------------------------------------------------------------------


def _history(stamp: datetime, call_id: str, run_id: str) -> list:
    return [
        ModelRequest(parts=[UserPromptPart("hi", timestamp=stamp)], timestamp=stamp, run_id=run_id),
        ModelResponse(
            parts=[ToolCallPart("nh_eval", '{"expression": "1"}', tool_call_id=call_id)],
            timestamp=stamp,
            provider_response_id=f"resp-{run_id}",
            model_name=f"model-{run_id}",
            run_id=run_id,
        ),
        ModelRequest(parts=[ToolReturnPart("nh_eval", "1", tool_call_id=call_id, timestamp=stamp)], run_id=run_id),
    ]


def test_digest_ignores_timestamps_run_ids_call_ids_and_provider_ids() -> None:
    parameters = ModelRequestParameters()
    first = _history(datetime(2024, 1, 1, tzinfo=timezone.utc), "call_abc", "run-1")
    second = _history(datetime(2025, 6, 1, tzinfo=timezone.utc), "pyd_ai_123", "run-2")
    assert request_digest(first, None, parameters) == request_digest(second, None, parameters)


def test_canonical_request_parses_json_tool_arguments_and_renumbers_ids() -> None:
    request = canonical_request(_history(datetime.now(timezone.utc), "call_abc", "run-1"), None, ModelRequestParameters())
    tool_call = request["messages"][1]["parts"][0]
    assert tool_call == {"args": {"expression": "1"}, "part_kind": "tool-call", "tool_call_id": "call_1", "tool_name": "nh_eval"}


def test_digest_changes_with_the_prompt() -> None:
    parameters = ModelRequestParameters()
    assert request_digest([ModelRequest(parts=[UserPromptPart("a")])], None, parameters) != request_digest(
        [ModelRequest(parts=[UserPromptPart("b")])], None, parameters
    )


def test_exchange_digest_is_computed_from_its_request() -> None:
    exchange = Exchange(request={"messages": []}, response={"kind": "response", "parts": []}, model="m", authored=True, created_with="x")
    assert len(exchange.digest) == 64
