"""The step contract under adversarial model output: side effects run once, in order, all or nothing."""

from __future__ import annotations

import asyncio
import json

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor


def assign(target: str, expression: str) -> object:
    return call("nh_assign", target_path=target, expression=expression)


def evaluate(expression: str) -> object:
    return call("nh_eval", expression=expression)


@nh.natural_function
def pop_last(log: list[str]) -> str:
    """natural
    Return the last entry of <log>, removing it.
    """


@nh.natural_function
def answer() -> int:
    """natural
    Return the answer.
    """


@nh.natural_function
def tally_count() -> int:
    count: int = 0
    """natural
    Set <:count>.
    """
    return count


@nh.natural_function
def tally_both() -> tuple[int, str]:
    count: int = 0
    label: str = "before"
    """natural
    Set <:count> and <:label>.
    """
    return count, label


# --- return_expression -----------------------------------------------------------------------------


def test_return_expression_runs_exactly_once() -> None:
    log = ["only"]
    executor, _ = scripted_executor([finish("return", return_expression="log.pop()")])
    with nh.run(executor):
        assert pop_last(log) == "only"
    assert log == []


def test_return_expression_side_effect_happens_once() -> None:
    calls: list[int] = []
    executor, _ = scripted_executor([finish("return", return_expression="len(calls.append(1) or calls)")])

    @nh.natural_function
    def record(calls: list[int]) -> int:
        """natural
        Record a call in <calls> and return how many there are.
        """

    with nh.run(executor):
        assert record(calls) == 1
    assert calls == [1]


# --- order of tool calls ---------------------------------------------------------------------------


def test_tool_calls_of_one_response_run_in_the_order_sent_even_when_one_awaits() -> None:
    async def slow(value: str) -> str:
        await asyncio.sleep(0.01)
        return value

    executor, _ = scripted_executor([assign("result", "slow('first')"), assign("result", "'last'"), finish()])

    @nh.natural_function
    async def fill(slow: object) -> str:
        result = ""
        """natural
        Use <slow> to set <:result>.
        """
        return result

    async def main() -> str:
        with nh.run(executor):
            return await fill(slow)

    assert asyncio.run(main()) == "last"


# --- walrus ----------------------------------------------------------------------------------------


def test_walrus_in_eval_is_validated_against_the_write_binding_type() -> None:
    executor, script = scripted_executor([evaluate("(count := 'x')")], [finish()])

    with nh.run(executor):
        assert tally_count() == 0
    error = json.loads(script.last_tool_results()[0])["error"]
    assert error["kind"] == "invalid_input"
    assert error["message"].startswith("cannot assign 'count': expected int")


def test_walrus_in_eval_is_coerced_like_an_assignment() -> None:
    executor, _ = scripted_executor([evaluate("(count := '7')"), finish()])

    with nh.run(executor):
        assert tally_count() == 7


def test_walrus_inside_a_refused_assign_is_not_kept() -> None:
    executor, script = scripted_executor([assign("count", "(label := 'set') and 'not a number'")], [finish()])

    with nh.run(executor):
        assert tally_both() == (0, "before")
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "invalid_input"


def test_refused_walrus_keeps_the_assignment_beside_it_from_being_stored() -> None:
    executor, _ = scripted_executor([assign("label", "(count := 'many') and 'named'")], [finish()])

    with nh.run(executor):
        assert tally_both() == (0, "before")


def test_walrus_that_never_runs_binds_nothing_and_is_not_an_error() -> None:
    executor, script = scripted_executor([evaluate("False and (spare := 1)")], [finish()])

    @nh.natural_function
    def probe() -> None:
        """natural
        Look around.
        """

    with nh.run(executor):
        probe()
    assert script.last_tool_results() == ['{"value": false, "error": null}']


# --- what is sent next to an outcome --------------------------------------------------------------


def test_unknown_tool_next_to_an_outcome_holds_the_outcome_back() -> None:
    executor, script = scripted_executor(
        [call("made_up_tool", x=1), finish("return", return_expression="1")], [finish("return", return_expression="2")]
    )
    with nh.run(executor):
        assert answer() == 2
    assert script.requests == 2


def test_failing_tool_after_the_outcome_holds_the_outcome_back() -> None:
    executor, script = scripted_executor(
        [finish("return", return_expression="1"), evaluate("1 / 0")], [finish("return", return_expression="2")]
    )
    with nh.run(executor):
        assert answer() == 2
    assert "ZeroDivisionError" in str(script.seen[1][-1].parts)


def test_succeeding_tool_after_the_outcome_does_not_hold_it_back() -> None:
    executor, script = scripted_executor([finish("return", return_expression="1"), evaluate("1 + 1")])
    with nh.run(executor):
        assert answer() == 1
    assert script.requests == 1


def test_several_outcomes_in_one_response_are_sent_back_for_correction() -> None:
    executor, script = scripted_executor(
        [finish("return", return_expression="1"), finish("return", return_expression="3")],
        [finish("return", return_expression="2")],
    )
    with nh.run(executor):
        assert answer() == 2
    assert "2 nh_outcome calls in one response" in str(script.seen[1][-1].parts)


def test_several_outcomes_evaluate_no_return_expression() -> None:
    log = ["a", "b"]
    executor, _ = scripted_executor(
        [finish("return", return_expression="log.pop()"), finish("pass")],
        [finish("return", return_expression="log.pop()")],
    )
    with nh.run(executor):
        assert pop_last(log) == "b"
    assert log == ["a"]


# --- bounded error text ---------------------------------------------------------------------------


def test_tool_error_for_a_huge_failing_expression_is_bounded() -> None:
    huge = "{}['" + "k" * 1_000_000 + "']"
    executor, script = scripted_executor([evaluate(huge)], [finish()])

    @nh.natural_function
    def probe() -> None:
        """natural
        Look around.
        """

    with nh.run(executor):
        probe()
    (envelope,) = script.last_tool_results()
    assert json.loads(envelope)["error"]["kind"] == "execution"
    assert len(envelope) < 5_000


def test_execution_error_for_a_huge_failing_return_expression_is_bounded() -> None:
    huge = "{}['" + "k" * 500_000 + "']"
    executor, _ = scripted_executor(*[[finish("return", return_expression=huge)]] * 3)
    with nh.run(executor), pytest.raises(nh.ExecutionError, match="raised KeyError") as caught:
        answer()
    assert len(str(caught.value)) < 5_000


def test_exception_raised_with_a_huge_message_is_bounded() -> None:
    executor, _ = scripted_executor([finish("raise", raise_message="x" * 1_000_000, raise_error_type="ValueError")])
    with nh.run(executor), pytest.raises(ValueError, match=r"more characters\]$") as caught:
        answer()
    assert len(str(caught.value)) < 5_000
