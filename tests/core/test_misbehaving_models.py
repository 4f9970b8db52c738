"""Models that do not play by the step protocol, as real (small, local) models do: what the user is told.

- A model that answers in plain text instead of calling a tool: the error quotes its last text, clipped and
  masked, counts the responses without a tool call, and when every response was text, says the server or
  its chat template may not support tool calls.
- A model that repeats the same call: stopped after `max_repeated_calls` responses (default 3) instead of
  running until the request budget (50 requests), with an error naming the call; nothing is committed.
- A model that goes round without anything new: stopped after `max_idle_rounds` responses (default 5).
- Several outcome calls in one response: one retry, not several.
"""

from __future__ import annotations

import pytest

import nighthawk as nh
from nighthawk import events
from nighthawk.configuration import DEFAULT_MAX_IDLE_ROUNDS, DEFAULT_MAX_REPEATED_CALLS
from scripting import call, finish, scripted_executor

SECRET = "sk-live-4f9c2a7e1b3d5f8a0c6e"


@nh.natural_function
def total(numbers: list[int]) -> int:
    """natural
    Return the sum of <numbers>.
    """


@nh.natural_function
def write_or_report() -> tuple[int, BaseException | None]:
    """The write binding as the caller sees it after the block, and the block's error."""
    result = 0
    try:
        """natural
        Set <:result> to 7.
        """
    except nh.ExecutionError as error:
        return result, error
    return result, None


@nh.natural_function
def check_with_service(api_key: str) -> None:
    """natural
    Check the service with <api_key>.
    """


def failing_eval() -> list:
    return [call("nh_eval", expression="undefined_name")]


# --- plain text instead of a tool call -------------------------------------------------------------------


def test_text_only_answers_are_quoted_and_counted_in_the_error() -> None:
    executor, _ = scripted_executor("Let me think.", "It could be 6.", "The sum is 6.")
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        total([1, 2, 3])
    message = str(caught.value)
    assert "3 of 3 model responses had no tool call" in message
    assert "the model's last text: 'The sum is 6.'" in message


def test_model_that_only_ever_answers_in_text_is_told_the_server_may_not_support_tools() -> None:
    executor, _ = scripted_executor(*["Sure! The answer is 6."] * 3)
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        total([1, 2, 3])
    assert "the server or its chat template may not support tool calls (see docs/local-models.md)" in str(caught.value)


def test_text_beside_tool_calls_does_not_blame_the_server() -> None:
    executor, _ = scripted_executor(
        [call("nh_eval", expression="sum(numbers)")], "The sum is 6.", "The sum is 6.", "The sum is 6."
    )
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        total([1, 2, 3])
    assert "3 of 4 model responses had no tool call" in str(caught.value)
    assert "chat template" not in str(caught.value)


def test_long_model_text_is_clipped_in_the_error() -> None:
    executor, _ = scripted_executor(*["word " * 2_000] * 3)
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        total([1, 2, 3])
    assert "more characters]" in str(caught.value)
    assert len(str(caught.value)) < 2_000


def test_a_secret_the_model_writes_is_masked_in_the_error() -> None:
    executor, _ = scripted_executor(*[f"Use the key {SECRET} here."] * 3)
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        check_with_service(SECRET)
    assert "the model's last text: 'Use the key " in str(caught.value)
    assert SECRET not in str(caught.value)


def test_each_text_only_response_is_an_event_with_its_text_and_count() -> None:
    seen: list[events.ModelText] = []
    executor, _ = scripted_executor("Hmm.", [finish("return", return_expression="sum(numbers)")])
    with nh.run(executor), events.listen(lambda event: seen.append(event) if isinstance(event, events.ModelText) else None):
        assert total([1, 2, 3]) == 6
    assert [(event.text, event.count) for event in seen] == [("Hmm.", 1)]


# --- the same call again and again -----------------------------------------------------------------------


def test_model_repeating_a_failing_call_is_stopped_after_three_requests() -> None:
    executor, script = scripted_executor(*[failing_eval()] * 20)
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        total([1, 2, 3])
    assert "the model repeats the same call: nh_eval(expression='undefined_name') got the same result 3 times" in str(caught.value)
    assert script.requests == DEFAULT_MAX_REPEATED_CALLS == 3


def test_repeat_stop_commits_nothing() -> None:
    executor, script = scripted_executor(
        [call("nh_assign", target_path="result", expression="7")], *[failing_eval()] * 20
    )
    with nh.run(executor):
        result, error = write_or_report()
    assert isinstance(error, nh.ExecutionError) and "repeats the same call" in str(error)
    assert result == 0
    assert script.requests == 4


def test_same_call_with_a_new_result_is_not_a_repeat() -> None:
    # The model reads a value that changes between its calls: each result is new, so nothing stops it.
    # (The script sends the same call part each time, so every call has the same id, as some servers number
    # the calls of each response from 0: results are matched to the response they answer, not by id alone.)
    executor, _ = scripted_executor(
        *[[call("nh_eval", expression="next(counter)")]] * 6, [finish("return", return_expression="6")]
    )
    with nh.run(executor):
        assert count_up(iter(range(100))) == 6


@nh.natural_function
def count_up(counter: object) -> int:
    """natural
    Read <counter> until you are sure, then return 6.
    """


def test_model_alternating_two_calls_is_stopped_once_nothing_new_comes_back() -> None:
    a, b = [call("nh_eval", expression="len(numbers)")], [call("nh_eval", expression="numbers[0]")]
    executor, script = scripted_executor(*[a, b] * 10)
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        total([1, 2, 3])
    assert "5 responses in a row brought no new assignment, tool result or outcome" in str(caught.value)
    assert "most often nh_eval(expression=" in str(caught.value)
    # Two responses with something new, then `max_idle_rounds` without.
    assert script.requests == 2 + DEFAULT_MAX_IDLE_ROUNDS


def test_repeat_limits_are_configurable_and_none_lifts_them() -> None:
    executor, script = scripted_executor(
        *[failing_eval()] * 8, [finish("return", return_expression="sum(numbers)")],
        max_repeated_calls=None, max_idle_rounds=None,
    )
    with nh.run(executor):
        assert total([1, 2, 3]) == 6
    assert script.requests == 9


def test_a_larger_repeat_limit_allows_more_repeats() -> None:
    executor, script = scripted_executor(*[failing_eval()] * 20, max_repeated_calls=6, max_idle_rounds=None)
    with nh.run(executor), pytest.raises(nh.ExecutionError, match="got the same result 6 times in a row"):
        total([1, 2, 3])
    assert script.requests == 6


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "3"])
def test_repeat_limits_refuse_what_is_not_a_whole_number_of_at_least_one(value: object) -> None:
    with pytest.raises(ValueError, match="must be a whole number of at least 1 or None"):
        nh.StepExecutorConfiguration(max_repeated_calls=value)
    with pytest.raises(ValueError, match="must be a whole number of at least 1 or None"):
        nh.StepExecutorConfiguration(max_idle_rounds=value)


# --- several outcomes in one response --------------------------------------------------------------------


def bad_outcomes(count: int) -> list:
    return [finish("return", return_expression="undefined_total") for _ in range(count)]


def test_several_outcomes_in_one_response_use_one_retry() -> None:
    # Two retries are allowed: two responses of three outcomes each, then a good one.
    executor, script = scripted_executor(
        bad_outcomes(3), bad_outcomes(3), [finish("return", return_expression="sum(numbers)")]
    )
    with nh.run(executor):
        assert total([1, 2, 3]) == 6
    assert script.requests == 3


def test_several_identical_outcomes_in_one_response_are_one_repeat() -> None:
    # Three identical calls in one response would reach `max_repeated_calls` if counted one by one.
    executor, script = scripted_executor(
        bad_outcomes(3), [call("nh_eval", expression="sum(numbers)")], [finish("return", return_expression="sum(numbers)")]
    )
    with nh.run(executor):
        assert total([1, 2, 3]) == 6
    assert script.requests == 3
