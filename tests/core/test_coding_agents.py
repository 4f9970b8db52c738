"""Coding agents as executors (`claude-code-cli:`, `claude-code-sdk:`, `codex:`) through fakes of each.

`tests/support/fake_agent.py` fakes the `claude` and `codex` programs (run as real child processes that
print the real programs' JSON events) and the `claude_agent_sdk` module; each one reaches the MCP server it
is given and calls the block's tools over HTTP. The contract tests run through every backend.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from support.agent_harness import BACKENDS, FakeAgent, agent, call, fake_agent_sdk, outcome  # noqa: F401 - `agent` is a fixture
from support.contract_blocks import compute, write_or_report

PASSWORD = "hunter2-blue-42"


@nh.natural_function
def double_plus_one(x: int) -> int:
    y = 0
    """natural
    Read <x>, set <:y> to twice it, and return y + 1.
    """
    return y


# --- the contract, through every backend ----------------------------------------------------------------


def test_block_reads_assigns_and_returns_through_the_agent(agent: FakeAgent) -> None:
    agent.script([
        call("nh_eval", expression="x + 1"),
        call("nh_assign", target_path="y", expression="x * 2"),
        outcome("return", return_expression="y + 1"),
        {"reply": "done"},
    ])
    with nh.run(agent.executor()):
        assert double_plus_one(5) == 11
    assert agent.tool_results()[:2] == ['{"value": 6, "error": null}', '{"value": 10, "error": null}']


def test_raise_outcome_raises_through_the_agent(agent: FakeAgent) -> None:
    agent.script([outcome("raise", raise_message="x is too large", raise_error_type="ValueError")])
    with nh.run(agent.executor()), pytest.raises(ValueError, match="x is too large"):
        compute(7)


def test_malformed_answer_ends_in_execution_error_and_commits_nothing(agent: FakeAgent) -> None:
    agent.script([call("nh_assign", target_path="y", expression="'after'"), {"reply": "I set it, all good!"}],
                 [{"reply": "{kind: pass"}])
    with nh.run(agent.executor()):
        y, error = write_or_report(1)
    assert y == "before"
    assert isinstance(error, nh.ExecutionError)
    assert "did not end the step with a valid outcome" in str(error)
    assert len(agent.runs) == 3  # the first turn and the two corrections nighthawk allows


def test_outcome_given_as_final_json_reply_is_accepted(agent: FakeAgent) -> None:
    agent.script([{"reply": '```json\n{"kind": "return", "return_expression": "x * 10"}\n```'}])
    with nh.run(agent.executor()):
        assert compute(4) == 40


def test_correction_resumes_the_agents_session(agent: FakeAgent) -> None:
    agent.script([{"reply": "Here you go: seventy"}], [outcome("return", return_expression="x * 10")])
    with nh.run(agent.executor()):
        assert compute(7) == 70
    first, second = agent.runs
    assert "Please include your response in a tool call" in second["prompt"]  # pydantic-ai's correction
    resumed = second.get("argv") or [second["options"]["resume"]]
    assert any(value.startswith(("session-", "thread-", "sdk-session-")) for value in resumed)


def test_user_tool_runs_on_the_callers_thread(agent: FakeAgent) -> None:
    agent.script([call("where"), outcome()])

    @nh.natural_function
    def look() -> None:
        """natural
        Call the tool.
        """

    with nh.run(agent.executor()):

        @nh.tool
        def where(run_context) -> str:  # type: ignore[no-untyped-def]
            """The name of the thread this runs on."""
            return threading.current_thread().name

        look()
    assert agent.tool_results()[0] == '{"value": "MainThread", "error": null}'


def test_tool_error_envelope_reaches_the_agent(agent: FakeAgent) -> None:
    agent.script([call("nh_eval", expression="missing_name"), outcome("return", return_expression="1")])
    with nh.run(agent.executor()):
        compute(1)
    error = json.loads(agent.tool_results()[0])["error"]
    assert error["kind"] == "resolution" and "missing_name" in error["message"]


def test_secret_values_are_masked_in_what_the_agent_receives(agent: FakeAgent) -> None:
    agent.script([call("nh_eval", expression="db_password"), call("nh_eval", expression="str(conn)"), outcome()])

    @nh.natural_function
    def use_password(db_password: str, conn: dict) -> None:
        """natural
        Connect with <db_password> and <conn>.
        """

    with nh.run(agent.executor()):
        use_password(PASSWORD, {"host": "db", "password": PASSWORD})
    (run,) = agent.runs
    assert PASSWORD not in json.dumps(run)
    assert agent.tool_results()[0] == '{"value": "<masked>", "error": null}'


def test_agents_usage_is_counted_for_the_step(agent: FakeAgent) -> None:
    agent.script([outcome("return", return_expression="1")])
    with nh.run(agent.executor()), nh.budget() as group:
        compute(1)
    assert (group.spent.input_tokens, group.spent.output_tokens) in {(100, 30), (120, 30)}  # codex: cached included


def test_server_refuses_a_request_without_the_token(agent: FakeAgent) -> None:
    agent.script([{"probe_without_token": True}, outcome("return", return_expression="1")])
    with nh.run(agent.executor()):
        compute(1)
    assert agent.runs[0]["probe_status"] == 401


FAILURES = {
    "crash": ([{"crash": "Error: not logged in; run claude login", "status": 3}], "not logged in; run claude login"),
    "error-result": ([call("nh_assign", target_path="y", expression="'after'"), {"error_result": "API overloaded"}], "API overloaded"),
    "not-json": ([{"garbage": "Welcome to the agent! (not JSON)"}], "Welcome to the agent! (not JSON)"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_failing_agent_raises_execution_error_with_its_message_and_commits_nothing(agent: FakeAgent, failure: str) -> None:
    actions, message = FAILURES[failure]
    agent.script(actions)
    with nh.run(agent.executor()):
        y, error = write_or_report(1)
    assert y == "before"
    assert isinstance(error, nh.ExecutionError)
    assert message in str(error)


def test_agent_that_does_not_answer_in_time_raises_execution_error_and_is_stopped(agent: FakeAgent) -> None:
    agent.script([call("nh_assign", target_path="y", expression="'after'"), {"hang": True}])
    with nh.run(agent.executor(request_timeout=1.0)):
        y, error = write_or_report(1)
    assert y == "before"
    assert isinstance(error, nh.ExecutionError) and "timed out" in str(error)
    if agent.backend == "claude-code-sdk":  # the SDK fake runs in this process: its query was closed
        assert fake_agent_sdk().closed == [0]
    else:
        with pytest.raises(ProcessLookupError):
            os.kill(int((agent.folder / "agent.pid.started").read_text()), 0)


def test_two_outcomes_in_one_turn_are_sent_back_for_correction(agent: FakeAgent) -> None:
    agent.script([outcome("return", return_expression="1"), outcome("return", return_expression="3")],
                 [outcome("return", return_expression="2")])
    with nh.run(agent.executor()):
        assert compute(0) == 2
    assert "2 nh_outcome calls in one response" in agent.runs[1]["prompt"]


def test_interrupt_stops_the_agent_and_its_server(agent: FakeAgent) -> None:
    agent.script([{"hang": True}])

    def press_ctrl_c() -> None:  # a real Ctrl-C on the main thread, once the agent is at work
        deadline = time.monotonic() + 30
        while agent.hanging() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if agent.hanging() is not None:
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    with nh.run(agent.executor()), pytest.raises(KeyboardInterrupt):
        presser.start()
        compute(1)
    presser.join()
    hung = agent.hanging()
    assert hung is not None
    if hung["pid"] is not None:
        with pytest.raises(ProcessLookupError):
            os.kill(hung["pid"], 0)
    else:
        assert fake_agent_sdk().closed == [0]
    port = int(hung["url"].split(":")[2].split("/")[0])
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_recorded_agent_steps_replay_without_the_agent(agent: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    from nighthawk.replay import replay_executor

    agent.script([call("nh_eval", expression="x + 1"), call("nh_assign", target_path="y", expression="x * 2"),
                  outcome("return", return_expression="y + 1")])
    store = agent.folder / "store.yaml"
    configuration = nh.StepExecutorConfiguration(model=f"{agent.backend}:default")
    with nh.run(replay_executor(store, "record", configuration=configuration)):
        assert double_plus_one(5) == 11
    monkeypatch.setenv("PATH", str(agent.folder / "nowhere"))  # no agent program from here on
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)
    with nh.run(replay_executor(store, "replay", configuration=configuration)):
        assert double_plus_one(5) == 11
    assert len(agent.runs) == 1


def test_map_runs_items_through_the_agent_side_by_side(agent: FakeAgent) -> None:
    agent.script([call("nh_eval", expression="x"), outcome("return", return_expression="x * 10")])
    with nh.run(agent.executor()):
        result = nh.map(compute, [1, 2, 3], concurrency=3, progress=False)
    assert list(result) == [10, 20, 30]
    assert sorted(agent.tool_results(run)[0] for run in range(3)) == [f'{{"value": {x}, "error": null}}' for x in (1, 2, 3)]


def test_image_binding_is_refused_naming_the_binding_and_the_agent(agent: FakeAgent) -> None:
    from media_samples import png

    agent.script([outcome("return", return_expression="1")])

    @nh.natural_function
    def describe(photo: bytes) -> str:
        """natural
        Describe <photo> and return the description.
        """
        return ""

    with nh.run(agent.executor()), pytest.raises(
        nh.ExecutionError, match=rf"the model '{agent.backend}:default' refused the image or document sent for `<photo>`"
    ):
        describe(png())
    assert agent.runs == []  # the agent was never started on a prompt holding the bytes' repr


def test_image_an_nh_eval_yields_reaches_the_agent_as_image_content(agent: FakeAgent) -> None:
    from media_samples import png

    agent.script([call("nh_eval", expression="chart"), outcome("return", return_expression="1")])

    @nh.natural_function
    def look(chart: bytes) -> int:
        """natural
        Evaluate chart, look at the picture and return 1.
        """
        return 0

    with nh.run(agent.executor()):
        look(png())
    assert agent.runs[0]["tool_results"][0]["images"] == ["image/png"]


# --- what each backend is given ----------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> str:
    folder = tmp_path / "project"
    folder.mkdir()
    return str(folder)


def finish_quickly(agent: FakeAgent) -> None:
    agent.script([outcome("return", return_expression="1")])


@pytest.mark.parametrize("agent", ["claude-code-cli"], indirect=True)
def test_claude_cli_arguments(agent: FakeAgent, project: str) -> None:
    finish_quickly(agent)
    executor = agent.executor("sonnet", working_directory=project, permission_mode="plan", max_turns=3,
                              max_budget_usd=0.5, claude_allowed_tools=("Read",))
    with nh.run(executor):
        compute(1)
    (run,) = agent.runs
    argv = run["argv"]
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--allowedTools") + 1] == (
        "mcp__nighthawk__nh_eval,mcp__nighthawk__nh_assign,mcp__nighthawk__nh_outcome,Read"
    )
    options = {flag: argv[argv.index(flag) + 1] for flag in ("--model", "--permission-mode", "--max-turns", "--max-budget-usd")}
    assert options == {"--model": "sonnet", "--permission-mode": "plan", "--max-turns": "3", "--max-budget-usd": "0.5"}
    assert "--strict-mcp-config" in argv and "--resume" not in argv
    assert run["cwd"] == project
    assert run["config_mode"] == "0o600"
    assert run["mcp_config"]["mcpServers"]["nighthawk"]["url"].startswith("http://127.0.0.1:")
    assert not any("Bearer" in value for value in argv)  # the token is in the 0600 file only


@pytest.mark.parametrize("agent", ["codex"], indirect=True)
def test_codex_arguments(agent: FakeAgent, project: str) -> None:
    finish_quickly(agent)
    with nh.run(agent.executor("gpt-5-codex", working_directory=project, sandbox_mode="read-only")):
        compute(1)
    (run,) = agent.runs
    argv = run["argv"]
    assert argv[:2] == ["exec", "--json"] and argv[-1] == "-"
    assert argv[argv.index("--cd") + 1] == project and run["cwd"] == project
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert argv[argv.index("--model") + 1] == "gpt-5-codex"
    assert "--skip-git-repo-check" in argv
    assert 'mcp_servers.nighthawk.bearer_token_env_var="NIGHTHAWK_MCP_TOKEN"' in argv
    assert any(value.startswith('mcp_servers.nighthawk.url="http://127.0.0.1:') for value in argv)
    assert run["prompt"].startswith("You run one step of a Python program")  # codex exec has no system prompt flag


@pytest.mark.parametrize("agent", ["claude-code-sdk"], indirect=True)
def test_claude_sdk_options(agent: FakeAgent, project: str) -> None:
    finish_quickly(agent)
    with nh.run(agent.executor("opus", working_directory=project, permission_mode="acceptEdits", max_turns=4)):
        compute(1)
    (run,) = agent.runs
    options = run["options"]
    assert (options["cwd"], options["permission_mode"], options["max_turns"], options["model"]) == (project, "acceptEdits", 4, "opus")
    assert options["allowed_tools"] == ["mcp__nighthawk__nh_eval", "mcp__nighthawk__nh_assign", "mcp__nighthawk__nh_outcome"]
    assert options["system_prompt"]["preset"] == "claude_code"
    assert run["mcp_servers"]["nighthawk"]["headers"]["Authorization"].startswith("Bearer ")


@pytest.mark.parametrize("agent", ["claude-code-cli"], indirect=True)
def test_claude_cli_loads_the_project_settings_and_skills_it_is_told_to(agent: FakeAgent, project: str) -> None:
    finish_quickly(agent)
    executor = agent.executor(working_directory=project, setting_sources=("project",), claude_allowed_tools=("Skill",))
    with nh.run(executor):
        compute(1)
    argv = agent.runs[0]["argv"]
    assert argv[argv.index("--setting-sources") + 1] == "project"
    assert argv[argv.index("--allowedTools") + 1].endswith(",Skill")


@pytest.mark.parametrize("agent", ["claude-code-sdk"], indirect=True)
def test_claude_sdk_loads_the_project_settings_and_skills_it_is_told_to(agent: FakeAgent, project: str) -> None:
    finish_quickly(agent)
    with nh.run(agent.executor(working_directory=project, setting_sources=("project",))):
        compute(1)
    assert agent.runs[0]["options"]["setting_sources"] == ["project"]


@pytest.mark.parametrize("agent", ["claude-code-cli", "claude-code-sdk"], indirect=True)
def test_claude_keeps_its_own_setting_sources_unless_told(agent: FakeAgent) -> None:
    finish_quickly(agent)
    with nh.run(agent.executor()):
        compute(1)
    run = agent.runs[0]
    assert "--setting-sources" not in run.get("argv", []) and run.get("options", {}).get("setting_sources") is None


def test_default_sends_no_model_choice(agent: FakeAgent) -> None:
    finish_quickly(agent)
    with nh.run(agent.executor("default")):
        compute(1)
    (run,) = agent.runs
    assert "--model" not in run.get("argv", []) and run.get("options", {}).get("model") is None


def test_allowed_tool_names_limits_the_tools_the_agent_sees(agent: FakeAgent) -> None:
    finish_quickly(agent)
    with nh.run(agent.executor(allowed_tool_names=("nh_eval",))):
        compute(1)
    assert agent.runs[0]["tools"] == ["nh_eval", "nh_outcome"]


# --- configuration and installation ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_relative_working_directory_is_refused_when_configured(backend: str) -> None:
    with pytest.raises(nh.NighthawkError, match=r"`working_directory`: Value error, must be an absolute path"):
        nh.StepExecutorConfiguration(model=f"{backend}:default", model_settings={"working_directory": "project"})


@pytest.mark.parametrize(("typed", "meant"), [("claude-code-cil:default", "claude-code-cli:default"),
                                             ("claude_code_sdk:opus", "claude-code-sdk:opus"), ("codx:default", "codex:default")])
def test_agent_model_with_a_typo_names_the_model_meant(typed: str, meant: str) -> None:
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=typed))
    with nh.run(executor), pytest.raises(
        nh.NighthawkError, match=rf"cannot use `model` '{typed}': there is no such provider; did you mean '{meant}'\?$"
    ):
        compute(1)


def test_setting_of_another_backend_is_refused_when_configured() -> None:
    with pytest.raises(nh.NighthawkError, match=r"not valid CodexModelSettings: `permission_mode`: Extra inputs"):
        nh.StepExecutorConfiguration(model="codex:default", model_settings={"permission_mode": "plan"})


def test_invalid_permission_mode_is_refused_when_configured() -> None:
    with pytest.raises(ValueError, match="permission_mode"):
        nh.ClaudeCodeCliModelSettings(permission_mode="yolo")


def test_settings_class_is_accepted_as_model_settings(tmp_path: Path) -> None:
    settings = nh.CodexModelSettings(working_directory=str(tmp_path), sandbox_mode="workspace-write")
    configuration = nh.StepExecutorConfiguration(model="codex:default", model_settings=settings)
    assert configuration.model_settings == {
        "working_directory": str(tmp_path.resolve()), "sandbox_mode": "workspace-write", "skip_git_repo_check": True,
    }


@pytest.mark.parametrize(("backend", "program"), [("claude-code-cli", "claude"), ("codex", "codex")])
def test_missing_program_is_a_configuration_error_naming_what_to_install(backend: str, program: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=f"{backend}:default"))
    with override_allow_model_requests(True), nh.run(executor), pytest.raises(
        nh.ModelConfigurationError, match=rf"the `{program}` program is not on PATH: install it \(npm install -g"
    ):
        compute(1)


def test_missing_sdk_is_a_configuration_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)  # `import claude_agent_sdk` fails
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model="claude-code-sdk:default"))
    with override_allow_model_requests(True), nh.run(executor), pytest.raises(
        nh.ModelConfigurationError, match=r"need the `claude-agent-sdk` package: install it with `pip install 'nighthawk-jupyter\[claude-code-sdk\]'`"
    ):
        compute(1)


def test_missing_mcp_package_is_a_configuration_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `find_spec("mcp")` raises for a module set to None
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model="codex:default"))
    with override_allow_model_requests(True), nh.run(executor), pytest.raises(
        nh.ModelConfigurationError, match=r"needs the `mcp` package: install it with `pip install 'nighthawk-jupyter\[codex\]'`"
    ):
        compute(1)
