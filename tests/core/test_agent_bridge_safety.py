"""The coding-agent bridge, seen by another local user and by a process that is going away.

Whoever holds a step's bearer token can run code in the user's process (`nh_eval`), so: no agent's command
line shows it, the server refuses whoever lacks it, and no agent or server outlives the step that started it,
however the step ends (an error or a `SystemExit` raised while it waits, the interpreter exiting with a step
still running). Every backend here runs a real program: the fake `claude` and `codex` of
`support/fake_agent.py`, and for `claude-code-sdk` the real `claude_agent_sdk` package running the fake
`claude`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from nighthawk.agents._bridge import ToolBridge, ToolSpec
from support.agent_harness import BACKENDS, FakeAgent, alive, call, fake_agent_environment, outcome
from support.contract_blocks import compute

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(params=BACKENDS)
def program_agent(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAgent]:
    """Each backend running a real agent process."""
    for name, value in fake_agent_environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    settings = {"executable": str(tmp_path / "bin" / "claude")} if request.param == "claude-code-sdk" else {}
    agent = FakeAgent(request.param, tmp_path, settings)
    with override_allow_model_requests(True):
        yield agent
    _kill_leftovers(agent)


def _kill_leftovers(agent: FakeAgent) -> None:
    """Whatever a failing test left running must not outlive it."""
    hung = agent.hanging() or {}
    for pid in (hung.get("pid"), hung.get("helper")):
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _token(run: dict[str, Any]) -> str:
    """The bearer token the agent was given (in its MCP configuration, or for codex in its environment)."""
    if "mcp_config" in run:
        return run["mcp_config"]["mcpServers"]["nighthawk"]["headers"]["Authorization"].removeprefix("Bearer ")
    return next(item.partition("=")[2] for item in run["environ"] if item.startswith("NIGHTHAWK_MCP_TOKEN="))


def _wait_until(condition: Callable[[], bool], within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _assert_gone(hung: dict[str, Any]) -> None:
    """The hanging agent, the helper it started and its MCP server are all gone."""
    assert _wait_until(lambda: not alive(hung["pid"])), f"the agent (pid {hung['pid']}) is still running"
    assert _wait_until(lambda: not alive(hung["helper"])), f"the agent's helper (pid {hung['helper']}) is still running"
    port = int(hung["url"].split(":")[2].split("/")[0])
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


# --- what other local users can see ------------------------------------------------------------------------


def test_token_is_on_no_agents_command_line(program_agent: FakeAgent) -> None:
    program_agent.script([call("nh_eval", expression="x"), outcome("return", return_expression="x * 10")])
    with nh.run(program_agent.executor()):
        assert compute(3) == 30
    (run,) = program_agent.runs
    token = _token(run)
    assert len(token) >= 40
    assert not any(token in part for part in run["cmdline"])  # what `ps` shows every user


def test_token_file_is_private_and_gone_after_the_step(program_agent: FakeAgent) -> None:
    program_agent.script([outcome("return", return_expression="x * 10")])
    with nh.run(program_agent.executor()):
        compute(1)
    (run,) = program_agent.runs
    token = _token(run)
    if program_agent.backend == "codex":  # codex reads it from its environment, which only this user can read
        assert f"NIGHTHAWK_MCP_TOKEN={token}" in run["environ"]
        return
    assert (run["config_mode"], run["config_folder_mode"]) == ("0o600", "0o700")
    assert not any(token in item for item in run["environ"])
    assert not Path(run["config_path"]).exists() and not Path(run["config_path"]).parent.exists()


@pytest.mark.parametrize("program_agent", ["claude-code-cli", "claude-code-sdk"], indirect=True)
def test_token_file_is_gone_after_a_failed_step(program_agent: FakeAgent) -> None:
    program_agent.script([call("nh_eval", expression="x"), {"error_result": "API overloaded"}])
    with nh.run(program_agent.executor()), pytest.raises(nh.ExecutionError):
        compute(1)
    assert program_agent.runs
    assert not any(Path(run["config_path"]).parent.exists() for run in program_agent.runs)


def test_agent_runs_in_a_process_group_of_its_own(program_agent: FakeAgent) -> None:
    program_agent.script([outcome("return", return_expression="1")])
    with nh.run(program_agent.executor()):
        compute(1)
    (run,) = program_agent.runs
    assert run["pgid"] == run["pid"] != os.getpgid(0)  # so stopping its group stops all it started, and not us


# --- nothing outlives the step -----------------------------------------------------------------------------


def _raise(exception: BaseException) -> Callable[..., None]:
    def handler(signum: int, frame: object) -> None:
        raise exception

    return handler


@pytest.mark.parametrize("exception", [SystemExit(3), RuntimeError("the notebook's own signal handler failed")],
                         ids=["SystemExit", "RuntimeError"])
def test_exception_raised_into_a_waiting_step_stops_the_agent_and_its_server(
    program_agent: FakeAgent, exception: BaseException
) -> None:
    program_agent.script([{"hang": True}])

    def signal_once_the_agent_works() -> None:
        if _wait_until(lambda: program_agent.hanging() is not None, within=60):
            os.kill(os.getpid(), signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, _raise(exception))
    signaller = threading.Thread(target=signal_once_the_agent_works, daemon=True)
    try:
        with nh.run(program_agent.executor()), pytest.raises(type(exception)):
            signaller.start()
            compute(1)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        signaller.join()
    hung = program_agent.hanging()
    assert hung is not None
    _assert_gone(hung)


def _wrapper(folder: Path, backend: str, body: str) -> str:
    """An `executable` that runs `body` (shell) and then the backend's fake program with the same arguments."""
    program = folder / "bin" / ("codex" if backend == "codex" else "claude")
    wrapper = folder / "wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\n{body}\nexec "{program}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.mark.parametrize("program_agent", ["claude-code-cli", "codex"], indirect=True)
def test_what_the_agent_started_in_the_background_ends_with_the_step(program_agent: FakeAgent) -> None:
    leftover = program_agent.folder / "background.pid"
    executable = _wrapper(program_agent.folder, program_agent.backend, f"sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > {leftover}")
    program_agent.script([outcome("return", return_expression="x * 10")])
    with nh.run(program_agent.executor(executable=executable)):
        assert compute(3) == 30
    assert _wait_until(lambda: not alive(int(leftover.read_text())), within=10), "the background process outlived the step"


@pytest.mark.parametrize("program_agent", ["claude-code-cli", "codex"], indirect=True)
def test_what_a_failed_agent_started_in_the_background_ends_with_the_step(program_agent: FakeAgent) -> None:
    leftover = program_agent.folder / "background.pid"
    executable = _wrapper(
        program_agent.folder, program_agent.backend,
        f"sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > {leftover}\nexit 3",
    )
    with nh.run(program_agent.executor(executable=executable)), pytest.raises(nh.ExecutionError):
        compute(3)
    assert _wait_until(lambda: not alive(int(leftover.read_text())), within=10), "the background process outlived the step"


@nh.natural_function
def long_task(x: int) -> int:
    f"""natural
    {"Some background the model should read first. " * 3000}
    Return <x> times ten.
    """


@pytest.mark.parametrize("program_agent", ["claude-code-cli", "codex"], indirect=True)
def test_an_agent_that_ends_before_reading_its_prompt_shows_its_status_and_stderr(program_agent: FakeAgent) -> None:
    # It closes its input at once and fails a moment later, as a CLI refusing a login does; the prompt is
    # longer than a pipe holds, so the write is still going on when the input closes.
    executable = _wrapper(
        program_agent.folder, program_agent.backend, "exec 0<&-\nsleep 0.3\necho 'Invalid API key · Please run /login' >&2\nexit 1"
    )
    with nh.run(program_agent.executor(executable=executable)), pytest.raises(nh.ExecutionError) as failed:
        long_task(1)
    assert "exited with status 1" in str(failed.value)
    assert "Invalid API key" in str(failed.value)


_EXITING_PROGRAM = """
import json, os, signal, sys, threading, time
import nighthawk as nh
from support.contract_blocks import compute

how, backend, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
configuration = nh.StepExecutorConfiguration(model=backend + ":default", model_settings=settings or None)
executor = nh.AgentStepExecutor.from_configuration(configuration=configuration)

def step():
    with nh.run(executor):
        compute(1)

def agent_at_work():
    while not os.path.exists(os.environ["FAKE_AGENT_PIDFILE"]) or not open(os.environ["FAKE_AGENT_PIDFILE"]).read():
        time.sleep(0.02)

if how == "exit-with-a-step-running":  # the step runs on a daemon thread; the program just ends
    threading.Thread(target=step, daemon=True).start()
    agent_at_work()
else:  # "SystemExit-from-a-signal-handler": a handler ends the program while its main thread waits on the step
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(3))
    threading.Thread(target=lambda: (agent_at_work(), os.kill(os.getpid(), signal.SIGTERM)), daemon=True).start()
    step()
"""


@pytest.mark.parametrize("how", ["exit-with-a-step-running", "SystemExit-from-a-signal-handler"])
def test_no_agent_or_server_outlives_the_interpreter(program_agent: FakeAgent, how: str) -> None:
    program_agent.script([{"hang": True}])
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    finished = subprocess.run(
        [sys.executable, "-c", _EXITING_PROGRAM, how, program_agent.backend, json.dumps(program_agent.settings)],
        env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, timeout=120,
    )
    assert finished.returncode == (0 if how == "exit-with-a-step-running" else 3), finished.stderr[-2000:]
    hung = program_agent.hanging()
    assert hung is not None
    _assert_gone(hung)


# --- the server, seen by another local process ------------------------------------------------------------


def _bridge_check(check: Callable[[ToolBridge], Any]) -> Any:
    """Run `check` against a live bridge (in a thread with its own loop, as a stranger's process would be)."""

    async def main() -> Any:
        async with ToolBridge([ToolSpec(name="nh_eval", description="evaluate", parameters={"type": "object"})]) as bridge:
            return await asyncio.to_thread(check, bridge)

    return asyncio.run(main())


_LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
_ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Bearer <token minus its last character>", "<token>",
                                           "Basic <token>", "Bearer <token><token>"])
def test_server_refuses_a_request_without_exactly_the_token(authorization: str | None) -> None:
    def attempt(bridge: ToolBridge) -> tuple[int, int]:
        headers = dict(_ACCEPT)
        if authorization is not None:
            headers["authorization"] = (authorization.replace("<token minus its last character>", bridge.token[:-1])
                                        .replace("<token>", bridge.token))
        refused = httpx.post(bridge.url, json=_LIST_TOOLS, headers=headers, timeout=10)
        allowed = httpx.post(bridge.url, json=_LIST_TOOLS, headers={**_ACCEPT, "authorization": bridge.authorization}, timeout=10)
        return refused.status_code, allowed.status_code

    assert _bridge_check(attempt) == (401, 200)


def _listening_addresses(port: int) -> set[str]:
    """The local addresses listening on `port`, from the kernel's socket tables."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found


def test_server_listens_on_ipv4_loopback_only() -> None:
    def listening(bridge: ToolBridge) -> set[str]:
        return _listening_addresses(int(bridge.url.split(":")[2].split("/")[0]))

    assert _bridge_check(listening) == {"0100007F"}  # 127.0.0.1, and no wildcard or IPv6 listener


def test_token_of_an_ended_step_is_refused_by_the_next_ones_server() -> None:
    old = _bridge_check(lambda bridge: bridge.authorization)

    def replay(bridge: ToolBridge) -> int:
        return httpx.post(bridge.url, json=_LIST_TOOLS, headers={**_ACCEPT, "authorization": old}, timeout=10).status_code

    assert _bridge_check(replay) == 401


async def _answer(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    """What the server's application sends for one request (`scope`), given an empty body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def test_websocket_with_the_token_is_refused_before_the_application() -> None:
    async def main() -> list[dict[str, Any]]:
        async with ToolBridge([]) as bridge:
            scope = {"type": "websocket", "path": "/mcp", "headers": [(b"authorization", bridge.authorization.encode())]}
            return await _answer(bridge._app(), scope)

    assert asyncio.run(main()) == [{"type": "websocket.close", "code": 1008}]


def test_token_is_refused_once_the_server_is_closing() -> None:
    async def main() -> list[dict[str, Any]]:
        async with ToolBridge([]) as bridge:
            app = bridge._app()
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [(b"authorization", bridge.authorization.encode())]}
        return await _answer(app, scope)

    assert asyncio.run(main())[0]["status"] == 401
