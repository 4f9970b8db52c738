"""Budgets, request settings and money in a notebook: `%nighthawk limits`, `%%natural --budget`, cell
budgets over every step a cell starts, `%nighthawk usage`, and cost in the step display."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output
from kernel_scripts import assign, outcome
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import nighthawk
import nighthawk_ipython


def looking(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that inspects the data forever and never finishes."""
    return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": "1 + 1"})])


def priced_tidy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One request per step, priced as gpt-4o (1,000 in + 500 out = $0.0075)."""
    return ModelResponse(
        parts=[assign("cleaned", "' '.join(text.split()) if 'text' in dir() else 'x'"), outcome("pass")],
        usage=RequestUsage(input_tokens=1000, output_tokens=500),
        provider_name="openai",
    )


def passing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[outcome("pass")])


def cached_tidy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One request per step, 800 of its 1,000 input tokens read from the provider's prompt cache."""
    return ModelResponse(
        parts=[outcome("pass")], usage=RequestUsage(input_tokens=1000, cache_read_tokens=800, output_tokens=50)
    )


@pytest.fixture(autouse=True)
def fresh_ledger() -> None:
    nighthawk.session_usage().reset()


def define_tidy(shell: Any) -> None:
    shell.run_cell(
        "import nighthawk as nh\n"
        "@nh.natural_function\n"
        "def tidy(text: str) -> str:\n"
        "    cleaned = ''\n"
        '    """natural\n'
        "    Collapse the spaces of <text> into <:cleaned>.\n"
        '    """\n'
        "    return cleaned\n"
    )


def test_step_budget_from_limits_ends_a_looping_cell_and_commits_nothing(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(looking, model_name="looking"))
    shell.run_line_magic("nighthawk", "limits step.requests=3")
    shell.user_ns["result"] = "before"
    with capture_output():
        cell = shell.run_cell("%%natural\nKeep checking, then put the answer in <:result>.")
    assert isinstance(cell.error_in_exec, nighthawk.BudgetExceededError)
    assert (cell.error_in_exec.level, cell.error_in_exec.budget, cell.error_in_exec.reached) == ("step", "requests", 3)
    assert "%nighthawk limits step.requests=" in str(cell.error_in_exec)
    assert shell.user_ns["result"] == "before"


def test_cell_budget_bounds_all_natural_function_calls_of_one_cell(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(priced_tidy, model_name="gpt-4o"))
    define_tidy(shell)
    shell.run_line_magic("nighthawk", "limits cell.requests=2")
    with capture_output():
        cell = shell.run_cell("done = []\nfor word in ['a  b', 'c  d', 'e  f']:\n    done.append(tidy(word))")
    assert isinstance(cell.error_in_exec, nighthawk.BudgetExceededError)
    assert (cell.error_in_exec.level, cell.error_in_exec.budget) == ("cell", "requests")
    assert len(shell.user_ns["done"]) == 2


def test_cell_budget_starts_again_in_the_next_cell(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(priced_tidy, model_name="gpt-4o"))
    define_tidy(shell)
    shell.run_line_magic("nighthawk", "limits cell.requests=1")
    with capture_output():
        first = shell.run_cell("tidy('a  b')")
        second = shell.run_cell("tidy('c  d')")
    assert first.error_in_exec is None
    assert second.error_in_exec is None


def test_natural_budget_option_bounds_that_cell_only(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(looking, model_name="looking"))
    with capture_output():
        cell = shell.run_cell("%%natural --budget requests=2,total_tokens=100000\nKeep checking.")
    assert isinstance(cell.error_in_exec, nighthawk.BudgetExceededError)
    assert (cell.error_in_exec.level, cell.error_in_exec.reached) == ("cell", 2)


@pytest.mark.parametrize("option", ["requests=0", "speed=3", "requests", "cost_usd=cheap"])
def test_bad_budget_option_is_a_usage_error_before_any_request(shell: Any, use_model: Any, option: str) -> None:
    use_model(FunctionModel(looking, model_name="looking"))
    with pytest.raises(UsageError, match="--budget"):
        shell.run_cell_magic("natural", f"--budget {option}", "Keep checking.")
    assert nighthawk.session_usage().by_model() == {}


@pytest.mark.parametrize(
    "item",
    ["step.requests=0", "cell.cost_usd=-1", "max_retries=-2", "max_retries=1.5", "request_timeout_s=0", "step.speed=3"],
)
def test_bad_budget_in_limits_is_a_usage_error_and_keeps_the_settings(shell: Any, item: str) -> None:
    settings = nighthawk_ipython.configure(shell=shell)
    shell.run_line_magic("nighthawk", "limits step.requests=7")
    with pytest.raises(UsageError):
        shell.run_line_magic("nighthawk", f"limits {item}")
    assert settings.budgets == {"step.requests": 7}


def test_status_shows_budgets_timeout_retries_and_fallback(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(passing, model_name="quiet"))
    shell.run_line_magic("nighthawk", "limits step.cost_usd=0.05 cell.requests=10 request_timeout_s=30 max_retries=4")
    with capture_output() as captured:
        shell.run_line_magic("nighthawk", "status")
    assert "budget:  step requests=50, cost_usd=0.05, wall_time_s=600.0 · cell requests=10" in captured.stdout
    assert "requests: timeout 30 s · retries 4 · fallback none" in captured.stdout


def test_limits_set_how_much_a_model_may_repeat_itself(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(passing, model_name="quiet"))
    shell.run_line_magic("nighthawk", "limits max_repeated_calls=6 max_idle_rounds=None")
    configuration = nighthawk.get_step_executor().configuration
    assert (configuration.max_repeated_calls, configuration.max_idle_rounds) == (6, None)


@pytest.mark.parametrize("item", ["max_repeated_calls=0", "max_idle_rounds=1.5"])
def test_bad_repeat_limit_is_a_usage_error(shell: Any, item: str) -> None:
    with pytest.raises(UsageError, match="must be a whole number of at least 1 or None"):
        shell.run_line_magic("nighthawk", f"limits {item}")


def test_none_lifts_a_default_step_bound(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(passing, model_name="quiet"))
    shell.run_line_magic("nighthawk", "limits step.wall_time_s=None")
    assert nighthawk.get_step_executor().configuration.step_budget == nighthawk.UsageBudget(requests=50)


def test_step_display_shows_cost_of_a_priced_model(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(priced_tidy, model_name="gpt-4o"))
    shell.user_ns["text"] = "a  b"
    with capture_output() as captured:
        shell.run_cell("%%natural\nCollapse the spaces of <text> into <:cleaned>.")
    (display,) = captured.outputs
    assert "1 request · 1000 in / 500 out tokens · $0.0075" in display.data["text/plain"]
    assert "$0.0075" in display.data["text/html"]


def test_step_display_says_unpriced_for_a_model_without_a_price(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(passing, model_name="quiet"))
    with capture_output() as captured:
        shell.run_cell("%%natural\nDo nothing.")
    (display,) = captured.outputs
    assert "unpriced" in display.data["text/plain"]


def cell_summary(shell: Any, words: list[str]) -> str:
    """The text of the summary of a cell calling `tidy` on each of `words`."""
    define_tidy(shell)
    with capture_output() as captured:
        shell.run_cell(f"[tidy(word) for word in {words!r}]")
    (display,) = [output for output in captured.outputs if "steps" in output.data.get("text/plain", "")]
    return str(display.data["text/plain"])


def test_cell_summary_sums_the_cost_of_its_steps(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(priced_tidy, model_name="gpt-4o"))
    assert "3 requests · 3000 in / 1500 out tokens · $0.0225" in cell_summary(shell, ["a  b", "c  d", "e  f"])


def usage_table(shell: Any, cell: str) -> list[str]:
    """The lines `%nighthawk usage` prints after running `cell`."""
    with capture_output():
        shell.run_cell(cell)
    with capture_output() as captured:
        shell.run_line_magic("nighthawk", "usage")
    return captured.stdout.splitlines()


def test_usage_magic_prints_totals_by_model_including_failed_steps(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(looking, model_name="looking"))
    shell.run_line_magic("nighthawk", "limits step.requests=2")
    (row,) = [line for line in usage_table(shell, "%%natural\nKeep checking.") if "looking" in line]
    assert row.split()[1] == "2"
    assert row.split()[-1] == "unpriced"


def test_step_display_and_cell_summary_show_the_cached_input_tokens(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(cached_tidy, model_name="cached"))
    assert "2 requests · 2000 (1600 cached) in / 100 out tokens" in cell_summary(shell, ["a  b", "c  d"])


def test_usage_magic_has_a_cached_column(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(cached_tidy, model_name="cached"))
    lines = usage_table(shell, "%%natural\nDo nothing.")
    header, row = [line.split() for line in lines if line.startswith(("model", "function"))]
    assert header[:6] == ["model", "requests", "input", "tokens", "cached", "output"]
    assert row[1:4] == ["1", "1000", "800"]


def test_usage_reset_prints_then_starts_from_zero(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(priced_tidy, model_name="gpt-4o"))
    shell.user_ns["text"] = "a  b"
    with capture_output():
        shell.run_cell("%%natural\nCollapse the spaces of <text> into <:cleaned>.")
    with capture_output() as captured:
        shell.run_line_magic("nighthawk", "usage --reset")
    assert "$0.0075" in captured.stdout
    with capture_output() as captured:
        shell.run_line_magic("nighthawk", "usage")
    assert captured.stdout.strip() == "no model requests in this kernel yet"


def test_budgets_survive_reloading_the_extension(shell: Any) -> None:
    shell.run_line_magic("nighthawk", "limits cell.cost_usd=0.5")
    shell.run_line_magic("reload_ext", "nighthawk")
    reloaded = nighthawk_ipython.configure(shell=shell)
    assert reloaded.budgets == {"cell.cost_usd": 0.5}
    reloaded.budgets = {}  # the fixture restores the settings object it saw before the reload


def test_cells_after_a_refused_request_setting_run_as_before(shell: Any, use_model: Any) -> None:
    use_model(FunctionModel(passing, model_name="quiet"))
    with pytest.raises(UsageError, match="request_timeout_s"):
        shell.run_line_magic("nighthawk", "limits request_timeout_s=0")
    with capture_output() as captured:
        cell = shell.run_cell("1 + 1")
    assert cell.error_in_exec is None and cell.result == 2
    assert "Error in callback" not in captured.stdout + captured.stderr
