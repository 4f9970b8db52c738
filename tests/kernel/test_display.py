"""The step display object (nighthawk_ipython/_display.py): final text and HTML, through real steps."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.utils.capture import capture_output
from kernel_scripts import assign, outcome, scripted
from pydantic_ai.messages import ToolCallPart

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
SUM_THEN_RETURN = ([assign("total", "sum(values)")], [outcome("return", return_expression="total * 2")])


def run(shell: Any, cell: str, line: str = "") -> Any:
    """Run a `%%natural` cell; return the one display it produced."""
    with capture_output() as captured:
        result = shell.run_cell(f"%%natural {line}\n{cell}")
    assert len(captured.outputs) == 1, captured.outputs
    return captured.outputs[0], result


@pytest.fixture
def summed(shell: Any, use_model: Any) -> Any:
    use_model(scripted(*SUM_THEN_RETURN))
    shell.user_ns["values"] = [1, 2, 3]
    output, _ = run(shell, "Sum <values> into <:total>, then return it doubled.")
    return output


def test_text_lists_the_tool_call_with_its_result(summed: Any) -> None:
    assert '1. nh_assign {"target_path":"total","expression":"sum(values)"} -> 6' in summed.data["text/plain"]


def test_text_shows_the_committed_locals_change(summed: Any) -> None:
    assert "+ total = 6 (committed)" in summed.data["text/plain"]


def test_text_shows_the_outcome_with_its_value(summed: Any) -> None:
    assert "outcome: return total * 2 -> 12" in summed.data["text/plain"]


def test_text_header_shows_status_model_requests_and_tokens(summed: Any) -> None:
    header = summed.data["text/plain"].splitlines()[0]
    assert re.fullmatch(r"Natural step In\[\d+\]:2 · completed · model function:scripted · 2 requests · \d+ in / \d+ out tokens", header)


def test_text_has_no_durations(summed: Any) -> None:
    assert not re.search(r"\d+\.\d+ ?s\b", summed.data["text/plain"])


def test_html_contains_names_values_tool_calls_and_outcome(summed: Any) -> None:
    page = summed.data["text/html"]
    for fragment in ("<code>nh_assign</code>", "<code>total</code>", "committed", "return total * 2 -&gt; 12"):
        assert fragment in page


def test_html_keeps_durations_in_sanitizable_spans(summed: Any) -> None:
    page = summed.data["text/html"]
    assert re.search(r'<span class="nh-duration">\d+\.\d\d s</span>', page)
    assert not re.search(r"\d+\.\d\d s", re.sub(r'<span class="nh-duration">[^<]*</span>', "", page))


def test_html_collapses_the_prompt_and_opens_the_tool_calls(summed: Any) -> None:
    page = summed.data["text/html"]
    assert "<details><summary>Prompt</summary>" in page
    assert "<details open><summary>Tool calls (1)</summary>" in page


def test_static_forms_are_identical_across_runs_apart_from_durations(shell: Any, use_model: Any) -> None:
    outputs = []
    for _ in range(2):
        shell.user_ns.pop("total", None)
        shell.user_ns["values"] = [1, 2, 3]
        use_model(scripted(*SUM_THEN_RETURN))
        shell.execution_count = 7  # nbval runs every cell with the same number each time
        output, _ = run(shell, "Sum <values> into <:total>, then return it doubled.")
        outputs.append(output.data)
    strip = lambda page: re.sub(r'<span class="nh-duration">[^<]*</span>', "", page)  # noqa: E731
    assert outputs[0]["text/plain"] == outputs[1]["text/plain"]
    assert strip(outputs[0]["text/html"]) == strip(outputs[1]["text/html"])


def test_no_widget_view_without_a_kernel(summed: Any) -> None:
    assert set(summed.data) == {"text/plain", "text/html"}


def test_text_mode_shows_only_plain_text(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    output, _ = run(shell, "Do nothing.", "--display text")
    assert set(output.data) == {"text/plain"}


def test_none_mode_shows_nothing(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    with capture_output() as captured:
        shell.run_cell("%%natural --display none\nDo nothing.")
    assert captured.outputs == []


def test_failed_tool_call_shows_its_error_kind_and_message(shell: Any, use_model: Any) -> None:
    use_model(scripted([ToolCallPart("nh_eval", {"expression": "1/0"})], [outcome("pass")]))
    output, _ = run(shell, "Divide.")
    assert "1. nh_eval {\"expression\":\"1/0\"} -> error execution: ZeroDivisionError" in output.data["text/plain"]


def test_raised_step_is_shown_before_the_error(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("raise", raise_message="no data", raise_error_type="ValueError")]))
    output, result = run(shell, "Give up.")
    assert isinstance(result.error_in_exec, ValueError)
    assert "outcome: raise ValueError: no data" in output.data["text/plain"]


def test_secret_values_are_masked(shell: Any, use_model: Any) -> None:
    token = "sk-" + "a1B2c3D4e5" * 4
    use_model(scripted([assign("api_key", repr(token))], [outcome("pass")]))
    output, _ = run(shell, "Store the key in <:api_key>.")
    assert token not in output.data["text/plain"]
    assert token not in output.data["text/html"]


def test_step_locals_only_change_is_marked_step_only(shell: Any, use_model: Any) -> None:
    use_model(scripted([assign("scratch", "41")], [outcome("pass")]))
    output, _ = run(shell, "Think in a scratch variable.")
    assert "+ scratch = 41 (step only)" in output.data["text/plain"]
    assert "scratch" not in shell.user_ns


def test_repr_is_short(summed: Any, shell: Any) -> None:
    view = _last_view(shell)
    assert re.fullmatch(r"<StepView In\[\d+\]:2 completed>", repr(view))


def _last_view(shell: Any) -> Any:
    from nighthawk_ipython._extension import state_for

    return state_for(shell).displayer.last_view
