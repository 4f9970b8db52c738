"""A step written out as Python (core/nighthawk/transcript/_as_python.py), from the calls and outcome its events tell."""

from __future__ import annotations

import pytest
from nighthawk.events import OutcomeReached
from nighthawk.transcript._as_python import CallCode, step_as_python


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
        "# left out: 2 calls that failed (what a failed call changed before its error stays changed)\ntotal = sum(items)\n"
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


def _hides(code: str) -> bool:
    """Whether `code` holds a character that reads as nothing, or as something else (see `_HIDDEN`)."""
    import unicodedata

    return any(c not in "\n\t" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"} for c in code)


# U+202E and U+2066 reorder what follows ("Trojan Source"), U+200B is invisible, ESC and a backspace redraw
# a terminal line, U+2028 reads as a line break to an editor but not to Python.
@pytest.mark.parametrize("hidden", ["\u202e", "\u2066", "\u200b", "\x1b[2K", "\x08", "\u2028"])
def test_a_character_that_hides_or_reorders_code_is_written_as_its_escape(hidden: str) -> None:
    expression = f"len('ok{hidden}') + 1  # {hidden} is_admin = True"
    code = step_as_python([assigned("total", expression)], PASSED, cell=True)
    assert not _hides(code)
    assert "is_admin" not in code  # the model's comment, which showed other text than it held, is dropped
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace["total"] == eval(expression)


def test_a_string_over_several_lines_is_written_on_one_line_so_none_of_its_lines_passes_for_a_comment() -> None:
    expression = "len('''\n# left out: the next line\n''') or delete_everything()"
    code = step_as_python([evaluated(expression)], PASSED, cell=True)
    assert code == "len('\\n# left out: the next line\\n') or delete_everything()\n"


def test_a_user_tools_arguments_show_hidden_characters_as_escapes() -> None:
    call = CallCode(tool_name="lookup", expression=None, arguments='{"city": "Paris\u202e"}', succeeded=True)
    assert step_as_python([call], PASSED, cell=True) == (
        '# called the tool lookup with {"city": "Paris\\u202e"} (not written out as code)\n'
    )


def test_an_expression_holding_a_masked_secret_is_a_comment_not_code_that_would_assign_the_mask() -> None:
    code = step_as_python([assigned("token", "'<masked>'.strip()"), assigned("n", "1")], PASSED, cell=True)
    assert code == "# a secret in it is masked (<masked>): put it back to run it:\n# token = '<masked>'.strip()\nn = 1\n"


def test_a_functions_return_takes_another_name_when_the_code_assigns_result() -> None:
    code = step_as_python([assigned("result", "x * 2")], ended("return", return_expression="result + 1"), cell=False)
    assert code == "result = x * 2\nresult_2 = result + 1  # the block returns this\n"
    namespace = {"x": 5}
    exec(code, namespace)
    assert (namespace["result"], namespace["result_2"]) == (10, 11)


def test_a_raise_after_assignments_says_they_were_not_committed() -> None:
    code = step_as_python([assigned("total", "sum(items)")], ended("raise", raise_error_type="ValueError", raise_message="no"), cell=True)
    assert code == "total = sum(items)\n# the step raised here, so none of its write bindings was committed\nraise ValueError('no')\n"


def test_a_value_the_runtime_awaited_is_awaited_in_the_code() -> None:
    call = CallCode(tool_name="nh_assign", expression="fetch(a) if a else fetch(b)", target="rate", succeeded=True, awaited=True)
    assert step_as_python([call], PASSED, cell=True) == "rate = await (fetch(a) if a else fetch(b))\n"


def test_a_name_that_looks_like_another_is_a_comment_with_the_difference_escaped() -> None:
    # `a\ufe00` (a variation selector after `a`) is another variable than `a`, and looks the same.
    code = step_as_python([assigned("total", "a\ufe00 + 1")], PASSED, cell=True)
    assert code == (
        "# not runnable as shown: a name in it holds a character that shows as nothing:\n# total = a\\ufe00 + 1\n"
    )


def argument(name: str, source: str, expression: str | None = None, *, parameter: bool = True, type_name: str = "") -> object:
    """One of a natural function's locals, as its `StepStarted` event tells where it comes from."""
    from nighthawk.events import LocalSource

    return LocalSource(name=name, parameter=parameter, source=source, expression=expression, type_name=type_name)


SORTED = [evaluated("xs.sort()")]
RETURNS_HEAD = ended("return", return_expression="xs[:n]")


def test_a_functions_arguments_are_bound_first_so_the_code_runs_as_written() -> None:
    sources = [argument("xs", "name", "scores"), argument("n", "literal", "2")]
    code = step_as_python(SORTED, RETURNS_HEAD, cell=False, local_sources=sources)
    assert code == "xs = scores  # the argument\nn = 2  # the argument\nxs.sort()\nresult = xs[:n]  # the block returns this\n"
    namespace = {"scores": [3, 1, 2]}
    exec(code, namespace)
    assert namespace["result"] == [1, 2]


def test_an_argument_nothing_names_is_a_comment_saying_what_to_bind() -> None:
    sources = [argument("xs", "unnamed", type_name="DataFrame"), argument("n", "literal", "2")]
    code = step_as_python(SORTED, RETURNS_HEAD, cell=False, local_sources=sources)
    assert code.splitlines()[:2] == [
        "# xs: the argument, a DataFrame no name in the notebook holds: bind xs to it to run this",
        "n = 2  # the argument",
    ]


def test_a_local_the_code_assigns_before_reading_it_is_not_bound() -> None:
    local = argument("big", "literal", "[]", parameter=False)
    code = step_as_python([assigned("big", "[1]")], ended("return", return_expression="big"), cell=False, local_sources=[local])
    assert code == "big = [1]\nresult = big  # the block returns this\n"


def test_a_local_the_function_set_before_the_block_is_bound_and_said_so() -> None:
    local = argument("total", "literal", "0", parameter=False)
    code = step_as_python([evaluated("total + 1")], PASSED, cell=False, local_sources=[local])
    assert code == "total = 0  # set in the function before the block\ntotal + 1\n"


def test_an_argument_the_notebook_holds_under_its_own_name_needs_no_binding() -> None:
    code = step_as_python(SORTED, PASSED, cell=False, local_sources=[argument("xs", "name", "xs")])
    assert code == "xs.sort()\n"


def test_an_argument_holding_a_masked_secret_is_a_comment() -> None:
    code = step_as_python([evaluated("len(key)")], PASSED, cell=False, local_sources=[argument("key", "literal", "'<masked>'")])
    assert code == "# a secret in it is masked (<masked>): put it back to run it:\n# key = '<masked>'  # the argument\nlen(key)\n"


def test_arguments_given_in_swapped_order_are_bound_together() -> None:
    # `gap(b, a)` with the notebook's `a` and `b`: `a = b` then `b = a` would give `b` its own value back.
    sources = [argument("a", "name", "b"), argument("b", "name", "a")]
    code = step_as_python([], ended("return", return_expression="a - b"), cell=False, local_sources=sources)
    assert code == "a, b = b, a  # the arguments, read together\nresult = a - b  # the block returns this\n"
    namespace = {"a": 1, "b": 10}
    exec(code, namespace)
    assert namespace["result"] == 9


def test_the_notebooks_names_are_read_before_a_literal_rebinds_one() -> None:
    # `f(b, 5)` for `def f(a, b)`: `b = 5` first would make `a` the 5, not the notebook's `b`.
    sources = [argument("b", "literal", "5"), argument("a", "name", "b")]
    code = step_as_python([], ended("return", return_expression="a + [b]"), cell=False, local_sources=sources)
    namespace = {"b": [1]}
    exec(code, namespace)
    assert namespace["result"] == [1, 5]


def test_an_isolated_step_says_that_its_in_place_changes_stayed_in_the_child() -> None:
    code = step_as_python([evaluated("items.append(4)")], PASSED, cell=True, isolated=True)
    assert code.splitlines()[0].startswith("# ran isolated, in a child process: what it changed in place")
    assert code.splitlines()[1] == "items.append(4)"
