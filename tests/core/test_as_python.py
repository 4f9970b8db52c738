"""A step written out as Python (core/nighthawk/_as_python.py), from the calls and outcome its events tell."""

from __future__ import annotations

import pytest
from nighthawk._as_python import CallCode, step_as_python
from nighthawk.events import OutcomeReached


def evaluated(expression: str, *, ok: bool = True) -> CallCode:
    return CallCode(tool_name="nh_eval", expression=expression, arguments="", succeeded=ok)


def assigned(target: str, expression: str, *, ok: bool = True) -> CallCode:
    return CallCode(tool_name="nh_assign", expression=expression, target=target, arguments="", succeeded=ok)


def ended(kind: str, **fields: str) -> OutcomeReached:
    return OutcomeReached(invocation_id="step-1", kind=kind, **fields)


PASSED = ended("pass")


def test_evaluations_and_assignments_are_statements_in_the_order_they_ran() -> None:
    calls = [evaluated("items.append(4)"), assigned("total", "sum(items)"), assigned("report.total", "total")]
    assert step_as_python(calls, PASSED, cell=True) == "items.append(4)\ntotal = sum(items)\nreport.total = total\n"


def test_failed_calls_are_left_out_and_counted() -> None:
    calls = [evaluated("undefined_name + 1", ok=False), assigned("total", "sum(items)"), assigned("x", "1 / 0", ok=False)]
    assert step_as_python(calls, PASSED, cell=True) == (
        "# 2 calls that failed left out: they changed nothing\ntotal = sum(items)\n"
    )


def test_a_walrus_binding_stays_as_the_model_wrote_it() -> None:
    code = step_as_python([evaluated("(n := len(items))"), assigned("double", "(m := n * 2)")], PASSED, cell=True)
    assert code == "(n := len(items))\ndouble = (m := n * 2)\n"
    namespace = {"items": [1, 2]}
    exec(code, namespace)
    assert (namespace["n"], namespace["double"], namespace["m"]) == (2, 4, 4)


def test_an_expression_over_several_lines_stays_one_statement() -> None:
    code = step_as_python([assigned("rows", "[\n    x * 2\n    for x in items\n]  # doubled")], PASSED, cell=True)
    namespace = {"items": [1, 2]}
    exec(code, namespace)
    assert namespace["rows"] == [2, 4]


def test_an_expression_a_mask_made_unreadable_stays_masked_as_a_comment() -> None:
    code = step_as_python([assigned("token", "api_key =<masked>'"), assigned("n", "1")], PASSED, cell=True)
    assert code == "# masked, so not runnable as it stands:\n# token = api_key =<masked>'\nn = 1\n"


def test_a_cells_return_is_its_last_expression() -> None:
    assert step_as_python([], ended("return", return_expression="total * 2"), cell=True) == "total * 2\n"


def test_a_functions_return_is_the_value_of_result() -> None:
    code = step_as_python([], ended("return", return_expression="total * 2"), cell=False)
    assert code == "result = total * 2  # the block returns this\n"


def test_a_raise_names_its_type_and_message() -> None:
    code = step_as_python([], ended("raise", raise_error_type="ValueError", raise_message="no 'rows' left"), cell=True)
    assert code == "raise ValueError(\"no 'rows' left\")\n"
    with pytest.raises(ValueError, match="no 'rows' left"):
        exec(code, {})


def test_a_raise_without_a_type_is_the_execution_error_the_step_raised() -> None:
    code = step_as_python([], ended("raise", raise_message="cannot"), cell=True)
    assert code == "from nighthawk import ExecutionError\nraise ExecutionError('cannot')\n"


@pytest.mark.parametrize("kind", ["break", "continue"])
def test_break_and_continue_are_comments_so_the_code_runs_as_a_cell(kind: str) -> None:
    code = step_as_python([assigned("seen", "seen + 1")], ended(kind), cell=False)
    assert code.splitlines()[0] == "seen = seen + 1"
    assert code.splitlines()[1].startswith(f"# {kind}: ")
    exec(code, {"seen": 0})


def test_a_user_tool_call_is_a_comment_with_its_arguments() -> None:
    call = CallCode(tool_name="lookup", expression=None, arguments='{"city": "Paris"}', succeeded=True)
    assert step_as_python([call], PASSED, cell=True) == (
        '# called the tool lookup with {"city": "Paris"} (not written out as code)\n'
    )


def test_a_failed_step_says_nothing_was_committed_and_writes_no_outcome() -> None:
    code = step_as_python([assigned("total", "sum(items)")], None, cell=True, failure="was interrupted")
    assert code == "total = sum(items)\n# the step was interrupted: none of its write bindings was committed\n"


def test_a_step_that_ran_no_code_says_so() -> None:
    assert step_as_python([], PASSED, cell=True) == "# the step ran no code\n"


def test_a_binding_an_oversight_hook_replaced_is_named() -> None:
    code = step_as_python([assigned("total", "1")], PASSED, cell=True, rewritten=["total"])
    assert code.splitlines()[1] == "# an oversight hook replaced total before the commit: the committed values are its own"
