"""`no_network()` keeps model-written code off the network while the step's own requests go through.

The listener is a real socket on 127.0.0.1: under the policy the model's code never reaches it, while the
step's model, an OpenAI-compatible server on loopback, keeps answering.
"""

from __future__ import annotations

import asyncio
import os  # noqa: F401
import socket  # noqa: F401 - the model's expressions use the modules of this namespace
import subprocess  # noqa: F401
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from nighthawk.prompting import _tokens
from scripting import call, finish, scripted_executor
from support import openai_server

Reply, tool_call = openai_server.Reply, openai_server.tool_call


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.5)
    yield server
    server.close()


def reached(server: socket.socket) -> bool:
    """Whether anything connected to `server`."""
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return False
    connection.close()
    return True


def connecting_to(server: socket.socket, host: str = "127.0.0.1") -> str:
    return f"socket.socket().connect(({host!r}, {server.getsockname()[1]}))"


@nh.natural_function
def fetch() -> None:
    """natural
    Fetch what is needed.
    """


def tool_result(expression: str, oversight: nh.oversight.Oversight) -> str:
    """Run `fetch()` with a model whose code evaluates `expression`; the tool result it read."""
    executor, script = scripted_executor([call("nh_eval", expression=expression)], [finish()])
    with nh.run(executor), nh.scope(oversight=oversight):
        fetch()
    (result,) = script.last_tool_results()
    return result


def test_no_network_keeps_model_code_off_a_local_listener(listener: socket.socket) -> None:
    result = tool_result(connecting_to(listener), nh.oversight.no_network())
    assert not reached(listener)
    assert f"no_network refused socket.connect to 127.0.0.1:{listener.getsockname()[1]}" in result
    assert "model-written code may not use the network" in result


def test_no_network_refuses_name_look_ups() -> None:
    result = tool_result("socket.getaddrinfo('example.org', 443)", nh.oversight.no_network())
    assert "no_network refused socket.getaddrinfo to example.org:443" in result


def test_an_allowed_host_name_is_looked_up_and_reached(listener: socket.socket) -> None:
    expression = f"socket.create_connection(('localhost', {listener.getsockname()[1]}), timeout=2).close()"
    result = tool_result(expression, nh.oversight.no_network(allow=["localhost"]))
    assert '"error": null' in result


def test_an_allowed_address_is_reached(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    result = tool_result(connecting_to(listener), nh.oversight.no_network(allow=[f"127.0.0.1:{port}"]))
    assert reached(listener)
    assert '"error": null' in result


def test_an_allowed_host_name_allows_the_addresses_it_resolves_to(listener: socket.socket) -> None:
    result = tool_result(connecting_to(listener, "localhost"), nh.oversight.no_network(allow=["localhost"]))
    assert '"error": null' in result


def test_an_allowed_address_allows_no_other_port(listener: socket.socket) -> None:
    result = tool_result(connecting_to(listener), nh.oversight.no_network(allow=["127.0.0.1:1"]))
    assert not reached(listener)
    assert "(allowed: 127.0.0.1:1)" in result


def test_no_network_refuses_starting_a_process_that_could_reach_the_network() -> None:
    result = tool_result("subprocess.run(['true'])", nh.oversight.no_network())
    assert "no_network refused subprocess.Popen" in result


def test_no_network_combines_with_read_only(listener: socket.socket, tmp_path: Path) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("precious")
    both = nh.oversight.combine(nh.oversight.read_only(), nh.oversight.no_network())
    assert "no_network refused" in tool_result(connecting_to(listener), both)
    assert "read_only refused" in tool_result(f"[os.remove][0]({str(victim)!r})", both)
    assert victim.exists() and not reached(listener)


def test_user_code_reaches_the_network_after_a_guarded_step(listener: socket.socket) -> None:
    tool_result(connecting_to(listener), nh.oversight.no_network())
    socket.create_connection(listener.getsockname(), timeout=2).close()
    assert reached(listener)


# --- the step's own requests ----------------------------------------------------------------------------


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[openai_server.ScriptedOpenAIServer]:
    """An OpenAI-compatible server on loopback that the step's model talks to over real HTTP."""
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")  # no vocabulary download
    with openai_server.ScriptedOpenAIServer(lifetime=50.0) as scripted, override_allow_model_requests(True):
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield scripted


@nh.natural_function
async def fetch_async() -> None:
    """natural
    Fetch what is needed.
    """


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_step_whose_model_is_an_http_server_completes_under_no_network(
    provider: openai_server.ScriptedOpenAIServer, listener: socket.socket, kind: str
) -> None:
    provider.push(
        Reply(calls=[tool_call("nh_eval", expression=connecting_to(listener))]),
        Reply(calls=[tool_call("nh_outcome", kind="pass")]),
    )
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-test")
    executor: Any = nh.AgentStepExecutor.from_configuration(configuration=configuration)
    with nh.run(executor), nh.scope(oversight=nh.oversight.no_network()):
        fetch() if kind == "sync" else asyncio.run(fetch_async())
    assert provider.request_count == 2
    (result,) = provider.requests[1].tool_results
    assert "no_network refused socket.connect" in result
    assert not reached(listener)

