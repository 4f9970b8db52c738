"""Budgets per step and per group of steps, usage and cost reporting, retries, timeouts and fallback models.

Every model here is scripted (`FunctionModel`) or the loopback OpenAI-compatible server; a priced model is a
FunctionModel named like a real one, so genai-prices can price its usage offline.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage
from scripting import call, finish, scripted_executor
from support.http_steps import assign_and_pass, http_executor, serving
from support.openai_server import Hang, Status

import nighthawk as nh
from nighthawk import events


@nh.natural_function
def count_up(x: int) -> int:
    y = x
    """natural
    Store <x> plus one in <:y>.
    """
    return y


def looping_rounds(tool_rounds: int) -> list[list[ToolCallPart]]:
    """`tool_rounds` requests that each evaluate an expression, then one that assigns and passes.

    Each expression is a new one: the same call with the same result again and again would be a model that
    repeats itself, which `max_repeated_calls` stops before any budget does.
    """
    return [[call("nh_eval", expression=f"x + {index} - {index}")] for index in range(tool_rounds)] + [
        [call("nh_assign", target_path="y", expression="x + 1"), finish("pass")]
    ]


def priced_executor(rounds: list[list[ToolCallPart]], *, input_tokens: int = 1000, **configuration: object):
    """An executor whose model is priced as gpt-4o: each response reports `input_tokens` in, 500 out."""
    remaining = list(rounds)

    def answer(messages: object, info: object) -> ModelResponse:
        return ModelResponse(
            parts=remaining.pop(0),
            usage=RequestUsage(input_tokens=input_tokens, output_tokens=500),
            provider_name="openai",
        )

    model = FunctionModel(answer, model_name="gpt-4o")
    config = nh.StepExecutorConfiguration(model=model, **configuration)
    return nh.AgentStepExecutor.from_configuration(configuration=config)


def usage_events() -> tuple[list[events.UsageReported], object]:
    seen: list[events.UsageReported] = []
    return seen, events.listen(lambda event: seen.append(event) if isinstance(event, events.UsageReported) else None)


# --- step budgets ------------------------------------------------------------------------------------


def test_step_request_budget_stops_a_step_that_keeps_calling_tools():
    executor, script = scripted_executor(*looping_rounds(5), step_budget=nh.UsageBudget(requests=3))
    with nh.run(executor), pytest.raises(nh.BudgetExceededError, match=r"step budget `requests` of 3 was reached"):
        count_up(1)
    assert script.requests == 3


def test_step_request_budget_lets_a_step_within_it_finish():
    executor, script = scripted_executor(*looping_rounds(2), step_budget=nh.UsageBudget(requests=3))
    with nh.run(executor):
        assert count_up(1) == 2
    assert script.requests == 3


def test_step_token_budget_stops_the_step_and_names_the_figure_reached():
    executor = priced_executor(looping_rounds(3), step_budget=nh.UsageBudget(total_tokens=2_000))
    with nh.run(executor), pytest.raises(nh.BudgetExceededError) as caught:
        count_up(1)
    assert (caught.value.level, caught.value.budget, caught.value.limit) == ("step", "total_tokens", 2_000)
    assert caught.value.reached == 3_000  # two responses of 1,500 tokens each


def test_step_cost_budget_stops_a_priced_step():
    # gpt-4o: 1,000 input + 500 output tokens cost $0.0075 a response.
    executor = priced_executor(looping_rounds(3), step_budget=nh.UsageBudget(cost_usd=0.01))
    with nh.run(executor), pytest.raises(nh.BudgetExceededError, match=r"step budget `cost_usd` of \$0\.0100"):
        count_up(1)


def test_step_wall_time_budget_ends_a_step_whose_model_hangs():
    async def slow(messages: object, info: object) -> ModelResponse:
        await asyncio.sleep(30)
        raise AssertionError("the wall-time budget did not stop the step")

    config = nh.StepExecutorConfiguration(model=FunctionModel(slow), step_budget=nh.UsageBudget(wall_time_s=0.3))
    executor = nh.AgentStepExecutor.from_configuration(configuration=config)
    started = time.perf_counter()
    with nh.run(executor), pytest.raises(nh.BudgetExceededError, match=r"`wall_time_s` of 0\.3 s"):
        count_up(1)
    assert time.perf_counter() - started < 10  # stopped by the budget, not by the model finishing


def test_budget_error_leaves_the_write_binding_uncommitted():
    @nh.natural_function
    def keep(x: int) -> int:
        y = 0
        """natural
        Store <x> in <:y>.
        """
        return y

    rounds = [[call("nh_assign", target_path="y", expression="x")], *looping_rounds(4)]
    executor, _ = scripted_executor(*rounds, step_budget=nh.UsageBudget(requests=2))
    with nh.run(executor), pytest.raises(nh.BudgetExceededError):
        keep(5)


def test_default_step_budget_is_stated_and_lets_long_steps_finish():
    executor, script = scripted_executor(*looping_rounds(20))
    assert executor.configuration.step_budget == nh.UsageBudget(requests=50, wall_time_s=600.0)
    with nh.run(executor):
        assert count_up(1) == 2
    assert script.requests == 21


@pytest.mark.parametrize(
    "fields",
    [{"requests": 0}, {"total_tokens": -1}, {"cost_usd": float("nan")}, {"wall_time_s": True}, {"requests": 1.5}],
)
def test_usage_budget_refuses_values_that_are_not_positive_numbers(fields):
    with pytest.raises(ValueError, match="UsageBudget"):
        nh.UsageBudget(**fields)


# --- group (cell) budgets ----------------------------------------------------------------------------


def test_group_request_budget_stops_the_step_that_would_exceed_it():
    executor, script = scripted_executor(*looping_rounds(0), *looping_rounds(0), *looping_rounds(0))
    with nh.run(executor), nh.budget(requests=2):
        assert count_up(1) == 2
        assert count_up(2) == 3
        with pytest.raises(nh.BudgetExceededError, match=r"cell budget `requests` of 2 was reached"):
            count_up(3)
    assert script.requests == 2


def test_a_closed_group_without_limits_refuses_the_next_request_of_its_steps():
    executor, script = scripted_executor(*looping_rounds(0), *looping_rounds(0))
    with nh.run(executor), nh.budget() as group:
        assert count_up(1) == 2
        group.close()  # what a run does when it ends while some of its steps still run on threads
        with pytest.raises(nh.BudgetExceededError, match=r"cell budget `requests` of 1 was reached \(1\)"):
            count_up(2)
    assert script.requests == 1


def test_group_budget_limits_a_step_to_what_is_left():
    executor, script = scripted_executor(*looping_rounds(0), *looping_rounds(4))
    with nh.run(executor), nh.budget(requests=3):
        assert count_up(1) == 2
        with pytest.raises(nh.BudgetExceededError) as caught:
            count_up(2)
    assert caught.value.level == "cell"
    assert script.requests == 3


def test_group_budget_not_reached_lets_every_step_finish():
    executor, _ = scripted_executor(*looping_rounds(1), *looping_rounds(1))
    with nh.run(executor), nh.budget(requests=10, total_tokens=1_000_000) as group:
        assert count_up(1) == 2
        assert count_up(2) == 3
    assert group.spent.requests == 4


def test_cost_of_a_group_is_the_sum_of_its_steps():
    executor = priced_executor(looping_rounds(1) + looping_rounds(0))
    with nh.run(executor), nh.budget() as group:
        count_up(1)
        count_up(2)
    assert group.spent.requests == 3
    assert group.spent.cost_usd == pytest.approx(3 * 0.0075)
    assert group.spent.unpriced_requests == 0


def test_unpriced_model_counts_requests_with_an_unknown_cost_not_a_zero_one():
    executor, _ = scripted_executor(*looping_rounds(0))
    with nh.run(executor), nh.budget() as group:
        count_up(1)
    assert group.spent.cost_usd is None
    assert group.spent.priced_cost_usd == 0.0
    assert group.spent.unpriced_requests == 1


def test_a_group_that_sent_no_request_spent_nothing():
    with nh.budget() as group:
        pass
    assert group.spent.cost_usd == 0.0  # known: nothing was sent (only an answered unpriced request is unknown)


# --- usage reporting ---------------------------------------------------------------------------------


def test_usage_is_reported_with_cost_for_a_successful_step():
    seen, listening = usage_events()
    with nh.run(priced_executor(looping_rounds(0))), listening:
        count_up(1)
    assert len(seen) == 1
    assert (seen[0].model, seen[0].requests, seen[0].input_tokens, seen[0].output_tokens) == ("function:gpt-4o", 1, 1000, 500)
    assert seen[0].cost_usd == pytest.approx(0.0075)


def test_usage_is_reported_for_a_failed_step():
    # The model answers with text three times: the step fails, but the three requests were spent.
    executor, _ = scripted_executor("no", "still no", "never")
    seen, listening = usage_events()
    with nh.run(executor), listening, pytest.raises(nh.ExecutionError):
        count_up(1)
    assert [event.requests for event in seen] == [3]
    assert seen[0].cost_usd is None


def test_usage_is_reported_for_a_step_stopped_by_its_budget():
    executor, _ = scripted_executor(*looping_rounds(5), step_budget=nh.UsageBudget(requests=2))
    seen, listening = usage_events()
    with nh.run(executor), listening, pytest.raises(nh.BudgetExceededError):
        count_up(1)
    assert [event.requests for event in seen] == [2]


def test_session_usage_sums_steps_by_model_and_resets():
    ledger = nh.session_usage()
    ledger.reset()
    with nh.run(priced_executor(looping_rounds(0) + looping_rounds(0))):
        count_up(1)
        count_up(2)
    totals = ledger.by_model()
    assert list(totals) == ["function:gpt-4o"]
    assert (totals["function:gpt-4o"].requests, totals["function:gpt-4o"].cost_usd) == (2, pytest.approx(0.015))
    ledger.reset()
    assert ledger.by_model() == {}


# --- fallback ----------------------------------------------------------------------------------------


def test_fallback_model_answers_when_the_first_model_fails():
    def unavailable(messages: object, info: object) -> ModelResponse:
        raise ModelHTTPError(status_code=503, model_name="primary", body="overloaded")

    _, backup = scripted_executor(*looping_rounds(0))
    config = nh.StepExecutorConfiguration(model=FunctionModel(unavailable), fallback_models=(FunctionModel(backup),))
    with nh.run(nh.AgentStepExecutor.from_configuration(configuration=config)):
        assert count_up(1) == 2
    assert backup.requests == 1


# --- timeouts and retries over HTTP ------------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    with serving(monkeypatch, lifetime=40.0) as scripted:
        yield scripted



def test_request_timeout_setting_ends_a_hung_request_with_a_clear_error(server):
    @nh.natural_function
    def keep(x: int) -> int:
        y = 0
        """natural
        Store <x> plus one in <:y>.
        """
        return y

    server.push(Hang(20.0))
    started = time.perf_counter()
    with nh.run(http_executor(request_timeout_s=0.5)), pytest.raises(nh.ExecutionError, match="timed out"):
        keep(1)
    assert time.perf_counter() - started < 10
    assert server.request_count == 1


def test_rate_limited_request_waits_for_retry_after_then_succeeds(server):
    server.push(Status(429, "slow down", retry_after_ms=800), assign_and_pass())
    started = time.perf_counter()
    with nh.run(http_executor()):
        assert count_up(1) == 2
    assert server.request_count == 2
    assert time.perf_counter() - started >= 0.7  # the client waited as the server asked


def test_max_retries_setting_bounds_attempts_on_server_errors(server):
    server.push(*[Status(500)] * 5)
    with nh.run(http_executor(max_retries=1)), pytest.raises(nh.ExecutionError, match="HTTP 500"):
        count_up(1)
    assert server.request_count == 2


def test_default_request_settings_carry_the_output_cap_timeout_and_retries():
    settings = nh.StepExecutorConfiguration().request_settings()
    assert settings == {"max_tokens": 4096, "request_timeout": 120.0, "max_retries": 2}
    overridden = nh.StepExecutorConfiguration(model_settings={"max_retries": 0}, request_timeout_s=None)
    assert overridden.request_settings() == {"max_tokens": 4096, "max_retries": 0}
