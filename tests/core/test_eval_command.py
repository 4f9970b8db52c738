"""`nighthawk eval` as a user runs it: against a local OpenAI-compatible server, with a budget, saved and compared.

The server (`tests/support/openai_server.py`) answers every request like a model that only passes, so the
whole suite runs end to end over HTTP, through pydantic-ai and the OpenAI SDK, with every check failing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo

import nighthawk as nh
from nighthawk import _cli
from nighthawk.prompting import _tokens
from nighthawk.eval import PROGRAMS, compare, load_result, report, run_suite
from nighthawk.eval.cli import main
from nighthawk.eval.results import CheckResult, ProgramResult
from nighthawk.testing import CallbackExecutor, agent_executor

from support import openai_server
from support.eval_answers import ANSWERS

ROOT = Path(__file__).resolve().parents[2]
NAMES = [program.name for program in PROGRAMS]
CHECKS = sum(len(program.checks) for program in PROGRAMS)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    """A local server whose model only passes; the OpenAI models point at it."""
    only_passes = openai_server.Reply(calls=[openai_server.tool_call("nh_outcome", kind="pass")])
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")  # "gpt-test" has no vocabulary offline
    with (
        openai_server.NetworkRecorder() as network,
        openai_server.ScriptedOpenAIServer(lambda request: only_passes, lifetime=120.0, max_requests=1000) as scripted,
        override_allow_model_requests(True),
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield scripted
    assert network.non_loopback == [], "the eval reached beyond loopback"


def test_the_suite_runs_end_to_end_against_a_local_server(server, tmp_path: Path, capsys) -> None:
    path = tmp_path / "passing.json"
    assert main(["--model", "openai-chat:gpt-test", "--json", str(path)]) == 0
    saved = json.loads(path.read_text())
    assert [program["name"] for program in saved["programs"]] == NAMES
    result = load_result(path)
    assert result.model == "openai-chat:gpt-test"
    assert result.pass_rate == 0.0 and len(result.checks) == CHECKS
    assert result.requests == server.request_count  # every request the server saw is counted, once
    assert (result.input_tokens, result.output_tokens) == (10 * server.request_count, 5 * server.request_count)
    assert result.cost_usd is None  # the local model has no price
    shown = capsys.readouterr().out
    assert all(f"\n{name} " in shown for name in NAMES)
    assert f"overall            0.00       0/{CHECKS}" in shown


def test_show_steps_lists_the_tool_calls_of_a_failed_check(server, capsys) -> None:
    main(["--model", "openai-chat:gpt-test", "--only", "words_average"])
    assert "outcome(pass)" not in capsys.readouterr().out
    main(["--model", "openai-chat:gpt-test", "--only", "words_average", "--show-steps"])
    assert "    AssertionError\n      outcome(pass)\n" in capsys.readouterr().out


def test_show_steps_quotes_a_model_that_answers_in_text_instead_of_calling_tools(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    chatty = openai_server.Reply(text="The average word length is about 4.")
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")
    with (
        openai_server.ScriptedOpenAIServer(lambda request: chatty, lifetime=60.0, max_requests=100) as scripted,
        override_allow_model_requests(True),
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        main(["--model", "openai-chat:gpt-test", "--only", "words_average", "--show-steps"])
    shown = capsys.readouterr().out
    assert "      (answered without a tool call) 'The average word length is about 4.'\n" in shown
    assert "3 of 3 model responses had no tool call; the model's last text: 'The average word length is about 4.'" in shown
    assert "(no tool calls)" not in shown


def test_a_budget_stops_the_run_and_reports_the_rest_as_not_run(server) -> None:
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model="openai-chat:gpt-test"))
    with nh.run(executor):
        result = run_suite(["email_routing", "citation_graph"], concurrency=1, limit=nh.UsageBudget(requests=3))
    assert server.request_count == 3
    assert [check.status for check in result.checks].count("not run") == 5
    assert result.stopped.startswith("the cell budget `requests` of 3 was reached")
    assert "not run" in report(result).__repr__()


def test_budget_must_be_positive(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--budget", "-1"])
    assert "`--budget` must be a positive number or None, got -1.0" in capsys.readouterr().err


def test_a_missing_key_is_reported_before_any_check_runs(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["--model", "openai-chat:gpt-4.1"]) == 2
    assert "needs an API key in the environment variable `OPENAI_API_KEY`" in capsys.readouterr().err


def test_a_model_without_a_provider_is_one_line_and_exit_status_2(capsys) -> None:
    assert main(["--model", "test"]) == 2
    shown = capsys.readouterr()
    assert shown.err.splitlines() == [
        "nighthawk eval: `--model` must be a `provider:model` string such as "
        "'openai-responses:gpt-5.4-nano', got 'test'"
    ]
    assert shown.out == ""


def test_an_unknown_provider_is_reported_before_any_check_runs(capsys) -> None:
    assert main(["--model", "foo:bar", "--only", "words_average"]) == 2
    shown = capsys.readouterr()
    (line,) = shown.err.splitlines()
    assert line.startswith("nighthawk eval: cannot use `model` 'foo:bar': Unknown model: foo:bar.")
    assert shown.out == ""  # no report: no check ran


def test_the_cost_of_a_run_that_sent_no_request_is_unknown_not_zero() -> None:
    with nh.run(CallbackExecutor(lambda program, values: None)):  # answers with no model request
        result = run_suite(["words_average"])
    assert result.requests == 0
    assert result.cost_usd is None and result.programs[0].cost_usd is None
    assert "$0.0000" not in repr(report(result))


def test_a_check_that_sent_no_request_leaves_the_priced_cost_of_the_others_known() -> None:
    priced = CheckResult(program="p", check="a", run=0, status="passed", requests=2, cost_usd=0.01)
    silent = CheckResult(program="p", check="b", run=0, status="failed")  # failed before any request
    assert ProgramResult(name="p", checks=(priced, silent)).cost_usd == 0.01


def test_list_shows_every_program_with_its_checks(capsys) -> None:
    assert main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == NAMES
    assert lines[0].startswith("words_average      3 checks  average three numbers")


def test_only_with_an_unknown_name_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--only", "bogus"])
    assert "`--only` names no program ['bogus']" in capsys.readouterr().err


def right_and_passing(tmp_path: Path) -> tuple[Path, Path]:
    """Two saved runs of two programs: one model answering right, one only passing."""
    paths = []
    for label, answer in (("right", ANSWERS["bookshop"]), ("passing", lambda text, values: None)):
        with nh.run(CallbackExecutor(answer)):
            result = run_suite(["bookshop"], model=label)
        path = tmp_path / f"{label}.json"
        result.save(path)
        paths.append(path)
    return paths[0], paths[1]


def test_compare_prints_two_runs_side_by_side(tmp_path: Path, capsys) -> None:
    right, passing = right_and_passing(tmp_path)
    assert main(["--compare", str(right), str(passing)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("A: right (1 run(s))    B: passing (1 run(s))")
    assert f"bookshop  1.00  {'█' * 20}  0.00  {'·' * 20}  -1.00" in shown


def test_compare_refuses_a_file_that_is_not_a_result(tmp_path: Path, capsys) -> None:
    other = tmp_path / "other.json"
    other.write_text("{}")
    with pytest.raises(SystemExit):
        main(["--compare", str(other), str(other)])
    assert "is not an eval result of format 1; give a file written by `nighthawk eval --json`" in capsys.readouterr().err


def test_a_comparison_shows_as_a_table_with_bars_in_a_notebook(tmp_path: Path) -> None:
    right, passing = right_and_passing(tmp_path)
    bundle = compare(load_result(right), load_result(passing))._repr_mimebundle_()
    assert bundle["text/plain"].startswith("A: right")
    assert "<th>A: right</th><th>B: passing</th>" in bundle["text/html"]
    assert 'width:100%' in bundle["text/html"] and 'width:0%' in bundle["text/html"]


def test_a_saved_result_reads_back_unchanged(tmp_path: Path) -> None:
    with nh.run(CallbackExecutor(ANSWERS["fact_log"])):
        result = run_suite(["fact_log"])
    result.save(tmp_path / "run.json")
    assert load_result(tmp_path / "run.json") == result


def test_the_console_script_is_declared_and_dispatches_eval(capsys) -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["nighthawk"] == "nighthawk._cli:main"
    assert _cli.main(["eval", "--list"]) == 0
    assert capsys.readouterr().out.startswith("words_average")
    assert _cli.main(["evaluate"]) == 2
    assert "nighthawk: error: unknown command 'evaluate'; use `nighthawk eval`" in capsys.readouterr().err


def test_python_m_nighthawk_eval_lists_the_programs() -> None:
    done = subprocess.run([sys.executable, "-m", "nighthawk.eval", "--list"], capture_output=True, text=True, check=True)
    assert len(done.stdout.splitlines()) == 25


def test_import_nighthawk_does_not_load_the_eval_suite() -> None:
    code = "import sys, nighthawk; print(any(m.startswith('nighthawk.eval') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def answering(reply: Callable[[int], None] = lambda count: None) -> tuple[nh.AgentStepExecutor, list[int]]:
    """The real agent on a model that only passes, calling `reply(request_number)` before each answer."""
    requests: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests.append(len(requests) + 1)
        reply(len(requests))
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])

    return agent_executor(model), requests


def test_an_interrupt_lets_no_running_check_send_another_request() -> None:
    executor, requests = answering(lambda count: os.kill(os.getpid(), signal.SIGINT) if count == 2 else None)
    with nh.run(executor), pytest.raises(KeyboardInterrupt):
        # `keys_riddle_solved` would ask six times, one request after the other, on its worker thread; with
        # one check at a time, the interrupt finds the map waiting for it.
        run_suite(["riddle_loop"], concurrency=1)
    assert len(requests) == 2


def test_a_step_over_its_own_budget_fails_its_check_and_the_run_goes_on() -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": "1"})])  # never ends the step

    configuration = nh.StepExecutorConfiguration(step_budget=nh.UsageBudget(requests=2))
    with nh.run(agent_executor(model, configuration=configuration)):
        result = run_suite(["bookshop"])
    assert result.stopped == "" and [check.status for check in result.checks] == ["failed"] * 3
    assert "BudgetExceededError: the step budget `requests` of 2 was reached" in result.checks[0].failure


def test_a_failed_check_shows_its_own_line_and_the_step_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    def no_outcome(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "no such kind"})])

    from pydantic_ai.models.function import FunctionModel

    program = PROGRAMS[0]
    with nh.run(agent_executor(FunctionModel(no_outcome, model_name="broken"))):
        result = run_suite([program.name])
    sources = {check.__name__: inspect.getsource(check) for check in program.checks}
    for check in result.checks:
        first, error = check.failure.splitlines()[0], check.failure.splitlines()[-1]
        assert first != '"""'
        assert first in sources[check.check]  # a line of the check itself
        assert error.startswith("ExecutionError: the model did not end the step with a valid outcome")
