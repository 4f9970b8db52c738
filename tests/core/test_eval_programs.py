"""The eval suite's programs: each check holds for a model that does the right thing and fails for one that only passes.

Right answers come from `tests/support/eval_answers.py` (a scripted model per program, working each block
out from the live values); the model that only passes ends every block at once. Between them, they show
that every check can both hold and fail.
"""

from __future__ import annotations

import pytest

import nighthawk as nh
from nighthawk.eval import PROGRAMS, run_suite
from nighthawk.testing import CallbackExecutor, StepResponse

from support.eval_answers import ANSWERS

NAMES = [program.name for program in PROGRAMS]


def only_passes(program_text: str, step_locals: object) -> None:
    return None  # every block ends with a bare pass


def test_the_suite_has_25_programs_with_distinct_names() -> None:
    assert len(NAMES) == 25 and len(set(NAMES)) == 25
    assert all(program.checks for program in PROGRAMS)


def test_every_program_has_a_right_answer_script() -> None:
    assert sorted(ANSWERS) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_check_holds_when_the_model_does_the_right_thing(name: str) -> None:
    with nh.run(CallbackExecutor(ANSWERS[name])):
        result = run_suite([name])
    failures = {check.check: check.failure for check in result.checks if check.status != "passed"}
    assert failures == {}
    assert result.pass_rate == 1.0


@pytest.mark.parametrize("name", NAMES)
def test_every_check_fails_when_the_model_only_passes(name: str) -> None:
    with nh.run(CallbackExecutor(only_passes)):
        result = run_suite([name])
    held = [check.check for check in result.checks if check.status != "failed"]
    assert held == []
    assert all(check.failure for check in result.checks)
    assert result.pass_rate == 0.0


@pytest.fixture(scope="module")
def answers_by_block() -> dict[str, object]:
    """Each block's text mapped to the right-answer script of its program (recorded from one run each)."""
    found: dict[str, object] = {}
    for name, answer in ANSWERS.items():
        executor = CallbackExecutor(answer)
        with nh.run(executor):
            run_suite([name])
        found.update((call.program, answer) for call in executor.calls)
    return found


def test_the_whole_suite_scores_one_with_right_answers_over_several_runs(answers_by_block: dict) -> None:
    def answer(program_text: str, step_locals: object) -> object:
        return answers_by_block[program_text](program_text, step_locals)

    with nh.run(CallbackExecutor(answer)):
        result = run_suite(runs=2, concurrency=6)
    assert [program.name for program in result.programs] == NAMES
    assert len(result.checks) == 2 * sum(len(program.checks) for program in PROGRAMS)
    assert {check.status for check in result.checks} == {"passed"}
    assert result.pass_rate == 1.0


def test_a_failed_check_names_its_assertion_line() -> None:
    with nh.run(CallbackExecutor(only_passes)):
        result = run_suite(["words_average"])
    assert result.checks[0].failure == 'assert mean_of_three("4", "six", "ocho") == 6.0\nAssertionError'


def test_a_failed_check_keeps_the_exception_the_program_raised() -> None:
    with nh.run(CallbackExecutor(only_passes)):
        result = run_suite(["shop_subclasses"])
    assert result.checks[0].failure.endswith("TypeError: 'NoneType' object is not callable")


def test_each_run_repeats_every_check() -> None:
    with nh.run(CallbackExecutor(ANSWERS["bookshop"])):
        result = run_suite(["bookshop"], runs=3)
    assert [(check.check, check.run) for check in result.checks][:4] == [
        ("short_crime_found", 0), ("cookbook_found", 0), ("gardening_not_found", 0), ("short_crime_found", 1),
    ]
    assert len(result.checks) == 9


def test_an_unknown_program_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"`only` names no program \['bogus'\]; the programs are words_average, "):
        run_suite(["bogus"])


def test_runs_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match=r"`runs` must be a whole number of at least 1, got 0"):
        run_suite(["bookshop"], runs=0)


def test_a_second_run_asks_the_model_again() -> None:
    executor = CallbackExecutor(ANSWERS["bookshop"])
    with nh.run(executor):
        run_suite(["bookshop"])
        run_suite(["bookshop"])
    assert len(executor.calls) == 6  # three checks, one block each, twice: nothing answered from memory


def test_a_failed_check_keeps_the_tool_calls_of_its_steps() -> None:
    looks_only = StepResponse(evaluate=["len(fighters)"])  # looks at the state, changes nothing, passes
    with nh.run(CallbackExecutor(lambda program_text, step_locals: looks_only)):
        result = run_suite(["arena_turn"])
    steps = result.checks[0].steps
    assert [step.tool for step in steps] == ["nh_eval", "outcome"]
    assert "len(fighters)" in steps[0].arguments and "3" in steps[0].result
    assert steps[1].arguments == "pass"
