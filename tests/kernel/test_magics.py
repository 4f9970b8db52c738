"""`%%natural` and `%nighthawk` (nighthawk_ipython/_magics.py), driven through an InteractiveShell."""

from __future__ import annotations

import traceback
from typing import Any

import pytest
from IPython.core.error import UsageError
from kernel_scripts import assign, outcome, scripted
from scripting import offered_kinds
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

import nighthawk
import nighthawk_ipython

SUM_AND_PASS = (assign("total", "sum(values)"), outcome("pass"))


def test_write_binding_is_committed_after_success(shell: Any, use_model: Any) -> None:
    use_model(scripted([*SUM_AND_PASS]))
    shell.user_ns["values"] = [1, 2, 3]
    shell.run_cell_magic("natural", "", "Sum <values> into <:total>.")
    assert shell.user_ns["total"] == 6


def test_return_outcome_becomes_the_cell_value(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("return", return_expression="len(values) * 10")]))
    shell.user_ns["values"] = [1, 2]
    result = shell.run_cell("%%natural\nReturn ten times the length of <values>.", store_history=True)
    assert result.error_in_exec is None
    assert result.result == 20
    assert shell.user_ns["Out"][result.execution_count] == 20


def test_pass_outcome_gives_no_cell_value(shell: Any, use_model: Any) -> None:
    use_model(scripted([*SUM_AND_PASS]))
    shell.user_ns["values"] = [1]
    result = shell.run_cell("%%natural\nSum <values> into <:total>.")
    assert result.error_in_exec is None
    assert result.result is None


def test_raise_outcome_raises_the_requested_exception(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("raise", raise_message="no data", raise_error_type="ValueError")]))
    with pytest.raises(ValueError, match="no data"):
        shell.run_cell_magic("natural", "", "Raise if there is no data.")


def test_raise_outcome_fails_the_cell(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("raise", raise_message="no data", raise_error_type="ValueError")]))
    result = shell.run_cell("%%natural\nRaise if there is no data.")
    assert isinstance(result.error_in_exec, ValueError)


def test_write_binding_is_not_committed_when_the_step_raises(shell: Any, use_model: Any) -> None:
    use_model(scripted([assign("total", "99"), outcome("raise", raise_message="stop", raise_error_type="ValueError")]))
    shell.user_ns["total"] = "before"
    shell.run_cell("%%natural\nSet <:total> then give up.")
    assert shell.user_ns["total"] == "before"


def test_in_place_mutation_of_a_notebook_object_is_visible_afterwards(shell: Any, use_model: Any) -> None:
    use_model(scripted([ToolCallPart("nh_eval", {"expression": "values.append(4)"}), outcome("pass")]))
    values = [1, 2, 3]
    shell.user_ns["values"] = values
    shell.run_cell_magic("natural", "", "Append 4 to <values>.")
    assert shell.user_ns["values"] is values
    assert values == [1, 2, 3, 4]


def test_unknown_read_binding_raises_name_error(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    with pytest.raises(NameError, match="name 'nowhere' is not defined"):
        shell.run_cell_magic("natural", "", "Read <nowhere>.")


def test_error_traceback_stops_at_the_magic(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    with pytest.raises(NameError) as caught:
        shell.run_cell_magic("natural", "", "Read <nowhere>.")
    assert traceback.extract_tb(caught.value.__traceback__)[-1].name == "natural"


def test_read_binding_falls_back_to_builtins(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("return", return_expression="len is __builtins__['len'] if isinstance(__builtins__, dict) else True")]))
    assert shell.run_cell_magic("natural", "", "Use <len>.") is True


def test_parse_error_names_the_cell_and_line(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    with pytest.raises(nighthawk.NaturalParseError, match=r"In\[\d+\]:2: write binding `<:a.b>` must be a plain name"):
        shell.run_cell_magic("natural", "", "Set <:a.b>.")


def offered_outcomes(shell: Any, line: str, cell: str) -> list[str]:
    """The outcome kinds the model is offered when the cell runs."""
    seen: list[str] = []

    def script(messages: Any, info: Any) -> ModelResponse:
        seen.extend(sorted(offered_kinds(info)))
        return ModelResponse(parts=[outcome("pass")])

    nighthawk_ipython.configure(model=FunctionModel(script), shell=shell)
    shell.run_cell_magic("natural", line, cell)
    return seen


def test_frontmatter_deny_removes_the_outcome_from_the_model_tools(shell: Any) -> None:
    assert offered_outcomes(shell, "", "---\ndeny: [raise]\n---\nDo nothing.") == ["pass", "return"]


def test_break_and_continue_are_not_offered_in_a_cell(shell: Any) -> None:
    assert offered_outcomes(shell, "", "Do nothing.") == ["pass", "raise", "return"]


def test_deny_option_accepts_repeats_and_comma_lists(shell: Any) -> None:
    assert offered_outcomes(shell, "--deny return --deny 'raise,'", "Do nothing.") == ["pass"]


def test_deny_option_rejects_an_unknown_kind(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%%natural --deny: 'break' is not an outcome a cell can end with; choose from pass, return, raise"):
        shell.run_cell_magic("natural", "--deny break", "Do nothing.")


def test_bad_display_option_raises_usage_error_listing_the_choices(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"invalid choice: 'bogus' \(choose from 'widget', 'html', 'text', 'none'\)"):
        shell.run_cell_magic("natural", "--display bogus", "Do nothing.")


def test_bad_option_fails_the_cell(shell: Any) -> None:
    result = shell.run_cell("%%natural --display bogus\nDo nothing.")
    assert isinstance(result.error_in_exec, UsageError)


def test_model_option_uses_a_notebook_variable_for_this_cell_only(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("return", return_expression="'kernel'")]))
    shell.user_ns["other"] = scripted([outcome("return", return_expression="'cell'")])
    assert shell.run_cell_magic("natural", "--model other", "Say who you are.") == "cell"
    assert shell.run_cell_magic("natural", "", "Say who you are.") == "kernel"


def test_model_option_keeps_no_quote_characters(shell: Any) -> None:
    shell.user_ns["other"] = scripted([outcome("return", return_expression="'cell'")])
    assert shell.run_cell_magic("natural", "-m 'other'", "Say who you are.") == "cell"


def test_model_option_rejects_an_unknown_name(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%%natural --model: 'nosuch' is neither a `provider:model` string nor a notebook variable"):
        shell.run_cell_magic("natural", "-m nosuch", "Do nothing.")


def test_interpolate_option_fills_fields_before_parsing(shell: Any) -> None:
    prompts: list[str] = []

    def script(messages: Any, info: Any) -> ModelResponse:
        prompts.append(str(messages[0].parts[-1].content))
        return ModelResponse(parts=[outcome("pass")])

    nighthawk_ipython.configure(model=FunctionModel(script), shell=shell)
    shell.user_ns["unit"] = "metres"
    shell.run_cell_magic("natural", "-f", "Convert to {unit.upper()} and keep {{braces}}.")
    assert "Convert to METRES and keep {braces}." in prompts[0]


def test_missing_api_key_names_the_environment_variable(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    nighthawk_ipython.configure(model="openai-responses:gpt-5.4-nano", shell=shell)
    with pytest.raises(nighthawk.NighthawkError, match="environment variable `OPENAI_API_KEY`, which is not set"):
        shell.run_cell_magic("natural", "", "Do nothing.")


def test_annotation_in_the_notebook_types_the_write_binding(shell: Any, use_model: Any) -> None:
    use_model(scripted([assign("count", "'7'"), outcome("pass")]))
    shell.run_cell("count: int = 0")
    shell.run_cell_magic("natural", "", "Set <:count>.")
    assert shell.user_ns["count"] == 7


# --- %nighthawk -------------------------------------------------------------------------------------


def test_nighthawk_model_sets_a_provider_string(shell: Any) -> None:
    shell.run_line_magic("nighthawk", "model openai-chat:gpt-4o-mini")
    assert nighthawk_ipython.configure(shell=shell).model == "openai-chat:gpt-4o-mini"


def test_nighthawk_model_uses_a_notebook_variable(shell: Any) -> None:
    shell.user_ns["mine"] = scripted([outcome("return", return_expression="'mine'")])
    shell.run_line_magic("nighthawk", "model mine")
    assert shell.run_cell_magic("natural", "", "Who?") == "mine"


def test_nighthawk_model_uses_a_step_executor_variable_as_is(shell: Any) -> None:
    executor = nighthawk.AgentStepExecutor.from_configuration(
        configuration=nighthawk.StepExecutorConfiguration(model=scripted([outcome("pass")]))
    )
    shell.user_ns["runner"] = executor
    shell.run_line_magic("nighthawk", "model runner")
    assert nighthawk.get_step_executor() is executor


def test_nighthawk_model_rejects_an_unknown_name(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%nighthawk model: 'nosuch' is neither"):
        shell.run_line_magic("nighthawk", "model nosuch")


def test_nighthawk_display_sets_the_mode(shell: Any) -> None:
    shell.run_line_magic("nighthawk", "display text")
    assert nighthawk_ipython.configure(shell=shell).display == "text"


def test_nighthawk_display_rejects_an_unknown_mode(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%nighthawk display: 'fancy' is not a display mode; choose from widget, html, text, none"):
        shell.run_line_magic("nighthawk", "display fancy")


def test_nighthawk_limits_reach_the_executor_configuration(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    shell.run_line_magic("nighthawk", "limits value_max_tokens=50 locals_max_items=5")
    limits = nighthawk.get_step_executor().configuration.context_limits
    assert (limits.value_max_tokens, limits.locals_max_items) == (50, 5)


def test_nighthawk_limits_reject_an_unknown_key(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%nighthawk limits: unknown limit 'speed'; choose from locals_max_tokens"):
        shell.run_line_magic("nighthawk", "limits speed=3")


def test_nighthawk_limits_reject_a_non_positive_value(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%nighthawk limits: value_max_tokens must be a positive integer, got '0'"):
        shell.run_line_magic("nighthawk", "limits value_max_tokens=0")


def test_nighthawk_status_prints_the_settings(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("nighthawk", "display text")
    shell.run_line_magic("nighthawk", "status")
    assert "display: text" in capsys.readouterr().out


def test_nighthawk_rejects_an_unknown_subcommand(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"invalid choice: 'frobnicate'"):
        shell.run_line_magic("nighthawk", "frobnicate")


def test_nighthawk_replay_records_then_replays_without_the_model(shell: Any, use_model: Any, tmp_path: Any) -> None:
    store = tmp_path / "cells.yaml"
    use_model(scripted([assign("doubled", "n * 2"), outcome("pass")]))
    shell.user_ns["n"] = 21
    shell.run_line_magic("nighthawk", f"replay {store} --record")
    shell.run_cell_magic("natural", "", "Set <:doubled> to twice <n>.")
    assert shell.user_ns["doubled"] == 42
    use_model(scripted())  # a model with no answers: replay must not ask it
    shell.run_line_magic("nighthawk", f"replay {store}")
    del shell.user_ns["doubled"]
    shell.run_cell_magic("natural", "", "Set <:doubled> to twice <n>.")
    assert shell.user_ns["doubled"] == 42


def test_nighthawk_replay_miss_fails_the_cell_and_keeps_the_namespace(shell: Any, use_model: Any, tmp_path: Any) -> None:
    use_model(scripted())
    shell.run_line_magic("nighthawk", f"replay {tmp_path / 'empty.yaml'}")
    shell.user_ns["n"] = 1
    result = shell.run_cell("%%natural\nSet <:doubled> to twice <n>.")
    assert isinstance(result.error_in_exec, nighthawk.ExecutionError)
    assert "doubled" not in shell.user_ns


def test_nighthawk_replay_refuses_record_and_auto_together(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%nighthawk replay: choose one of --record and --auto"):
        shell.run_line_magic("nighthawk", "replay store.yaml --record --auto")


def test_nighthawk_record_flag_belongs_to_replay(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%nighthawk model: --record and --auto belong to `%nighthawk replay`"):
        shell.run_line_magic("nighthawk", "model x:y --record")


def test_parse_errors_name_the_running_cell(shell: Any, use_model: Any) -> None:
    use_model(scripted())
    result = shell.run_cell("%%natural\n---\ndeny: [nothing]\n---\nGo.", store_history=True)
    assert str(result.error_in_exec).startswith(f"In[{result.execution_count}]:")
