"""The step display object (nighthawk_ipython/_display.py): final text and HTML, through real steps."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.utils.capture import capture_output
from kernel_scripts import assign, outcome, scripted, step_events
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

import nighthawk_ipython
from nighthawk import events

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


def test_text_header_shows_status_model_requests_tokens_and_cost(summed: Any) -> None:
    header = summed.data["text/plain"].splitlines()[0]
    assert re.fullmatch(r"Natural step In\[\d+\]:2 · completed · model function:scripted · 2 requests · \d+ in / \d+ out tokens · unpriced", header)


def test_text_has_no_durations(summed: Any) -> None:
    assert not re.search(r"\d+\.\d+ ?s\b", summed.data["text/plain"])


def test_html_contains_names_values_tool_calls_and_outcome(summed: Any) -> None:
    page = summed.data["text/html"]
    for fragment in (">nh_assign</code>", ">total</code>", "committed", "return total * 2 -&gt; 12"):
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


def _chatty(messages: Any, info: Any) -> ModelResponse:
    """A model that never calls a tool, as a local model behind a chat template without tool support."""
    return ModelResponse(parts=[TextPart("I would add the numbers.")])


def test_text_shows_what_the_model_wrote_instead_of_calling_a_tool(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(_chatty, model_name="chatty"))
    output, result = run(shell, "Sum the numbers.")
    assert result.error_in_exec is not None
    assert "model text (3 responses without a tool call), last: 'I would add the numbers.'" in output.data["text/plain"]


def test_html_shows_what_the_model_wrote_instead_of_calling_a_tool(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(_chatty, model_name="chatty"))
    output, _ = run(shell, "Sum the numbers.")
    assert "model text (3 responses without a tool call), last: &#x27;I would add the numbers.&#x27;" in output.data["text/html"]


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
    from nighthawk_ipython._state import state_for

    (view,) = state_for(shell).displayer.last_view.steps
    return view


# --- many steps in one cell ---------------------------------------------------------------------------

CLASSIFY = '''
import nighthawk

@nighthawk.natural_function
def classify(text):
    label = ""
    """natural
    Label <text> as bug or idea in <:label>.
    """
    return label
'''


def _labeller(messages: list[Any], info: Any) -> ModelResponse:
    """Labels each text by a word in it; a text with "boom" makes the step raise."""
    prompt = str(messages[0].parts[-1].content)
    if any(part.part_kind == "tool-return" for message in messages for part in getattr(message, "parts", ())):
        return ModelResponse(parts=[outcome("pass")])
    if "boom" in prompt:
        return ModelResponse(parts=[outcome("raise", raise_message="cannot label", raise_error_type="ValueError")])
    label = "'bug'" if "crash" in prompt else "'idea'"
    return ModelResponse(parts=[assign("label", label)])


def run_loop(shell: Any, texts: list[str]) -> tuple[list[Any], Any]:
    """Call the natural function once per text from one plain cell; return the cell's outputs."""
    nighthawk_ipython.configure(model=FunctionModel(_labeller), shell=shell)
    shell.run_cell(CLASSIFY)
    shell.user_ns["texts"] = texts
    with capture_output() as captured:
        result = shell.run_cell("labels = [classify(t) for t in texts]")
    return captured.outputs, result


def test_loop_of_natural_function_calls_gives_one_display(shell: Any) -> None:
    outputs, _ = run_loop(shell, [f"crash {n}" for n in range(30)])
    assert len(outputs) == 1
    assert shell.user_ns["labels"] == ["bug"] * 30


def test_cell_summary_counts_steps_requests_and_tokens(shell: Any) -> None:
    (output,), _ = run_loop(shell, ["crash", "nice idea", "crash again"])
    first = output.data["text/plain"].splitlines()[0]
    assert re.fullmatch(r"Natural steps · 3 steps · 3 completed · 6 requests · \d+ in / \d+ out tokens · unpriced", first)


def test_cell_summary_names_the_block_the_steps_ran(shell: Any) -> None:
    (output,), _ = run_loop(shell, ["crash", "idea"])
    assert re.search(r"^  __main__:\d+ \(2 steps\): Label <text> as bug or idea in <:label>\.$", output.data["text/plain"], re.M)


def test_cell_summary_tells_apart_blocks_of_two_cells_that_share_a_line(shell: Any) -> None:
    nighthawk_ipython.configure(model=FunctionModel(_labeller), shell=shell)
    shell.run_cell(CLASSIFY)
    shell.run_cell(CLASSIFY.replace("classify", "tag").replace("as bug or idea", "with bug or idea"))
    with capture_output() as captured:
        shell.run_cell("labels = [classify('crash'), tag('idea')]")
    (output,) = captured.outputs
    text = output.data["text/plain"]
    assert re.search(r"^  __main__:\d+ \(1 step\): Label <text> as bug or idea in <:label>\.$", text, re.M)
    assert re.search(r"^  __main__:\d+ \(1 step\): Label <text> with bug or idea in <:label>\.$", text, re.M)


def test_a_big_tool_result_stays_a_short_line_in_the_text(shell: Any) -> None:
    big = "'x' * 20000 + '\\n' * 50"
    nighthawk_ipython.configure(model=scripted([assign("big", big)], [outcome("pass")]), shell=shell)
    with capture_output() as captured:
        shell.run_cell("%%natural\nFill <:big>.")
    (output,) = captured.outputs
    (line,) = [line for line in output.data["text/plain"].splitlines() if "nh_assign" in line]
    assert len(line) < 400
    assert line.rstrip().endswith("…")


def test_raised_step_stops_the_loop_and_is_counted(shell: Any) -> None:
    (output,), result = run_loop(shell, ["crash", "idea", "boom", "never reached"])
    assert isinstance(result.error_in_exec, ValueError)
    assert "3 steps · 2 completed · 1 raised" in output.data["text/plain"]
    assert "#3 __main__:" in output.data["text/plain"] and "raise ValueError: cannot label" in output.data["text/plain"]


def test_display_size_does_not_grow_with_the_number_of_steps(shell: Any) -> None:
    (few,), _ = run_loop(shell, [f"crash {n}" for n in range(20)])
    (many,), _ = run_loop(shell, [f"crash {n}" for n in range(200)])
    for mime in ("text/plain", "text/html"):
        assert len(many.data[mime]) < len(few.data[mime]) * 1.1, mime


def test_steps_left_out_of_a_long_cell_are_counted(shell: Any) -> None:
    (output,), _ = run_loop(shell, [f"crash {n}" for n in range(50)])
    assert "  … 45 more steps not shown (45 completed)" in output.data["text/plain"]
    assert "… 45 more steps not shown (45 completed)" in output.data["text/html"]


def test_step_that_did_not_complete_is_shown_in_full_and_open_among_many(shell: Any) -> None:
    texts = [f"crash {n}" for n in range(30)]
    texts[16] = "boom"
    (output,), _ = run_loop(shell, texts)
    page = output.data["text/html"]
    assert re.search(r'<details class="nh-step nh-raised"[^>]* open><summary><b>#17</b>', page)
    assert "#17 __main__:" in output.data["text/plain"]


def test_each_listed_step_shows_the_value_it_wrote(shell: Any) -> None:
    (output,), _ = run_loop(shell, ["crash", "nice idea"])
    assert re.search(r'^  #2 __main__:\d+ · completed · pass · label = "idea" · 2 requests', output.data["text/plain"], re.M)


# --- readable and true ----------------------------------------------------------------------------------

def test_in_place_change_of_a_notebook_variable_is_marked_changed_in_place(shell: Any, use_model: Any) -> None:
    use_model(scripted([ToolCallPart("nh_eval", {"expression": "xs.sort()"})], [outcome("pass")]))
    shell.user_ns["xs"] = [3, 1, 2]
    output, _ = run(shell, "Sort <xs> in place.")
    assert shell.user_ns["xs"] == [1, 2, 3]
    assert "~ xs = [3,1,2] -> [1,2,3] (changed in place)" in output.data["text/plain"]


def test_new_key_added_to_a_notebook_dict_is_marked_changed_in_place(shell: Any, use_model: Any) -> None:
    use_model(scripted([ToolCallPart("nh_eval", {"expression": "table.update(total=6)"})], [outcome("pass")]))
    shell.user_ns["table"] = {"rows": 3}
    output, _ = run(shell, "Add a total to <table>.")
    assert re.search(r"<td[^>]*><span title=\"[^\"]*visible in Python\">changed in place</span></td>", output.data["text/html"])


def test_every_table_cell_is_left_aligned_inline(summed: Any) -> None:
    page = summed.data["text/html"]
    cells = re.findall(r"<t[dh]\b[^>]*>", page)
    assert cells and all("text-align:left" in cell for cell in cells)


def test_long_value_is_folded_under_its_first_characters(shell: Any, use_model: Any) -> None:
    use_model(scripted([assign("report", repr("word " * 60))], [outcome("pass")]))
    output, _ = run(shell, "Write a <:report>.")
    assert re.search(r"<details><summary><code[^>]*>&quot;word word [^<]*…</code> <i>\(\d+ characters\)</i></summary>", output.data["text/html"])



def _interrupted_during_a_tool_call() -> Any:
    """A step view fed what the event stream says of a step interrupted while its tool call ran."""
    started, prompt, call_started, *_ = step_events()
    view = nighthawk_ipython.StepView(started)
    for event in (prompt, call_started, events.StepFinished(invocation_id=started.invocation_id, status="interrupted", duration_s=1.5)):
        view.apply(event)
    return view


def test_text_shows_a_tool_call_cut_by_an_interrupt_as_interrupted() -> None:
    assert '1. nh_eval {"expression":"0 + 1"} -> (interrupted)' in _interrupted_during_a_tool_call().text()


def test_html_shows_a_tool_call_cut_by_an_interrupt_as_interrupted() -> None:
    page = _interrupted_during_a_tool_call().html()
    assert "<i>interrupted</i>" in page and "<i>running</i>" not in page
