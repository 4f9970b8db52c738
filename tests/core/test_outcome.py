"""The outcome contract (spec 8.4, 13): strict JSON, allowed kinds, exception types, clear errors."""

from __future__ import annotations

import re

import pytest

import nighthawk as nh
from nighthawk.answers.outcome import ReturnOutcome, parse_outcome
from nighthawk.configuration import StepExecutorConfiguration
from nighthawk.program.block import parse_program
from nighthawk.program.frame import Frame
from nighthawk.road.runtime import current_execution_context
from nighthawk.step._context import build_step
from scripting import call, finish, scripted_executor


def make_step(in_loop: bool = False, program: str = "Do it."):
    frame = Frame(
        python_locals={},
        python_globals={},
        read_values={},
        in_loop=in_loop,
        binding_types={},
        return_type=object,
        is_async=False,
        step_id="test:1",
    )
    return build_step(
        parse_program(program), frame, execution_context=current_execution_context(), configuration=StepExecutorConfiguration()
    )


def test_outcome_json_string_is_parsed() -> None:
    outcome = parse_outcome('{"kind": "return", "return_expression": "1"}', make_step())
    assert outcome == ReturnOutcome(kind="return", return_expression="1")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("not json at all", "the final answer is not JSON"),
        ("[1, 2]", "must be a JSON object with a `kind`"),
        ({"kind": "explode"}, "unknown outcome kind 'explode'"),
        ({"kind": "pass", "note": "extra"}, r"invalid 'pass' outcome: note: Extra inputs are not permitted"),
        ({"kind": "return"}, "return_expression: Field required"),
        ({"kind": "break"}, "outcome 'break' is not allowed for this block"),
        ({"kind": "raise", "raise_message": "x", "raise_error_type": "SystemExit"}, "is not one of the exception types"),
    ],
)
def test_invalid_outcomes_raise_execution_error_saying_what_was_wrong(data: object, message: str) -> None:
    with pytest.raises(nh.ExecutionError, match=message):
        parse_outcome(data, make_step())


def test_loop_blocks_allow_break_and_continue() -> None:
    step = make_step(in_loop=True)
    assert step.allowed_outcomes == ("pass", "return", "break", "continue", "raise")


def test_deny_only_narrows_the_syntactic_cap() -> None:
    step = make_step(in_loop=False, program="---\ndeny: [pass]\n---\nDo it.")
    assert step.allowed_outcomes == ("return", "raise")


def _block() -> object:
    @nh.natural_function
    def block() -> int:
        """natural
        Do something.
        """
        return 0

    return block


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I am done!", "last problem: Please include your response in a tool call"),
        ([call("nh_explode", kind="explode")], "last problem: `nh_explode` Unknown tool name: 'nh_explode'"),
        ([finish("pass", note="extra")], "invalid 'pass' outcome: note: Extra inputs are not permitted"),
        ([finish("break")], "outcome 'break' is not allowed for this block (allowed: pass, return, raise)"),
        (
            [finish("raise", raise_message="m", raise_error_type="SystemExit")],
            "`raise_error_type` 'SystemExit' is not one of the exception types offered to the block",
        ),
    ],
    ids=["plain-text", "unknown-kind", "extra-keys", "disallowed-kind", "unlisted-exception-type"],
)
def test_model_misbehaviour_becomes_execution_error_after_bounded_retries(answer: object, reason: str) -> None:
    executor, script = scripted_executor(*([answer] * 6))
    with nh.run(executor), pytest.raises(nh.ExecutionError, match=f"did not end the step with a valid outcome .*{re.escape(reason)}"):
        _block()()
    assert script.requests == 3  # the first answer plus OUTCOME_RETRIES corrective retries


def test_model_can_correct_an_invalid_outcome_within_the_retries() -> None:
    executor, script = scripted_executor([finish("return", return_expression="undefined_name")], [finish("return", return_expression="5")])
    with nh.run(executor):
        assert _block()() == 5
    assert "undefined_name" in str(script.seen[1][-1])


def test_failing_return_expression_reports_the_last_problem() -> None:
    bad = [finish("return", return_expression="1/0")]
    executor, _ = scripted_executor(bad, bad, bad)
    with nh.run(executor), pytest.raises(nh.ExecutionError, match="last problem: `return_expression` '1/0' raised ZeroDivisionError"):
        _block()()


def test_raise_without_type_is_an_execution_error_with_the_message() -> None:
    executor, _ = scripted_executor([finish("raise", raise_message="cannot do it")])
    with nh.run(executor), pytest.raises(nh.ExecutionError, match="Natural block raised: cannot do it"):
        _block()()


def test_tool_calls_and_outcome_in_one_response_finish_in_one_request() -> None:
    executor, script = scripted_executor(
        [call("nh_assign", target_path="out", expression="6 * 7"), finish("return", return_expression="out")]
    )
    with nh.run(executor):
        assert _block()() == 42
    assert script.requests == 1


def test_outcome_next_to_a_failed_tool_call_waits_for_the_model_to_see_the_error() -> None:
    executor, script = scripted_executor(
        [call("nh_eval", expression="1/0"), finish("return", return_expression="1")],
        [finish("return", return_expression="2")],
    )
    with nh.run(executor):
        assert _block()() == 2
    assert script.requests == 2
