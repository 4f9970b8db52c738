"""Failures that pass by themselves (429 bursts, 5xx) slow a `nighthawk.map` down and never stop it early.

The SDK's own retries are off (`max_retries=0`, as docs/batch.md advises), so every failure reaches the map,
against the test suite's local OpenAI-compatible server through the real OpenAI client. A map stops on such
failures only once no item has succeeded for `give_up_after_s`, and says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from nighthawk.prompting import _tokens
from support import openai_server

Reply, Status, tool_call = openai_server.Reply, openai_server.Status, openai_server.tool_call

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(180)]

ITEMS = [f"word {n}" for n in range(200)]
RETURN_SHOUT = Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper()")])


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., openai_server.ScriptedOpenAIServer]]:
    """`serve(script)`: the local server answering from `script`, the environment pointed at it."""
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")  # gpt-test's vocabulary would be downloaded
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    servers: list[openai_server.ScriptedOpenAIServer] = []

    def start(script: object) -> openai_server.ScriptedOpenAIServer:
        server = openai_server.ScriptedOpenAIServer(script, lifetime=150.0, max_requests=2000)  # type: ignore[arg-type]
        servers.append(server.start())
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        return server

    with override_allow_model_requests(True):
        yield start
    for server in servers:
        server.stop()


def executor() -> nh.AgentStepExecutor:
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-test", max_retries=0)
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


class Numbered:
    """A script that answers request number n with `failing(n)` when it gives a status, else a shout."""

    def __init__(self, failing: Callable[[int], openai_server.ScriptItem | None]) -> None:
        self.failing = failing
        self.failures = 0
        self.lock = threading.Lock()

    def __call__(self, request: openai_server.RecordedRequest) -> openai_server.ScriptItem:
        status = self.failing(request.index)
        if status is None:
            return RETURN_SHOUT
        with self.lock:
            self.failures += 1
        return status


def test_a_map_finishes_through_429_bursts_whatever_max_retries_says(serve) -> None:
    # 20 of every 100 requests are refused, each asking for a second's wait.
    script = Numbered(lambda n: Status(429, "slow down", retry_after_ms=1000) if n % 100 < 20 else None)
    serve(script)
    with nh.run(executor()):
        result = nh.map(shout, ITEMS, progress=False)
    assert list(result) == [text.upper() for text in ITEMS]
    assert script.failures >= 20


def test_a_map_finishes_through_one_server_error_in_ten_whatever_max_retries_says(serve) -> None:
    script = Numbered(lambda n: Status(500, "the server hiccuped", retry_after_ms=None) if n % 10 == 3 else None)
    serve(script)
    with nh.run(executor()):
        result = nh.map(shout, ITEMS, progress=False)
    assert list(result) == [text.upper() for text in ITEMS]
    assert script.failures >= 20


def test_a_map_finishes_through_one_dropped_connection_in_ten(serve) -> None:
    script = Numbered(lambda n: openai_server.Hang(0.0) if n % 10 == 3 else None)  # closed without an answer
    serve(script)
    with nh.run(executor()):
        result = nh.map(shout, ITEMS[:50], progress=False)
    assert list(result) == [text.upper() for text in ITEMS[:50]]
    assert script.failures >= 5


def test_a_map_whose_requests_keep_failing_so_stops_after_give_up_after_s_naming_it(serve) -> None:
    serve(Numbered(lambda n: Status(503, "overloaded")))
    with nh.run(executor()), pytest.raises(nh.MapStoppedError) as caught:
        nh.map(shout, ITEMS, progress=False, give_up_after_s=1)
    assert caught.value.cause.startswith("no item succeeded in ")
    assert caught.value.cause.endswith(" s of failures that usually pass (HTTP 503; give_up_after_s=1)")


def test_an_item_that_alone_keeps_failing_so_fails_after_give_up_after_s(serve) -> None:
    # The first item's requests fail from the start; the others succeed meanwhile.
    serve(lambda request: Status(500, "not this one") if "word 0" in str(request.body) else RETURN_SHOUT)
    with nh.run(executor()):
        result = nh.map(shout, ITEMS[:10], on_error="collect", progress=False, give_up_after_s=1)
    assert list(result.errors) == [0]
    assert "not this one" in str(result.errors[0])
    assert list(result)[1:] == [text.upper() for text in ITEMS[1:10]]


def test_give_up_after_s_must_be_a_positive_number() -> None:
    with pytest.raises(ValueError, match=r"`give_up_after_s` must be a number of seconds above 0, got 0"):
        nh.map(shout, ITEMS, give_up_after_s=0)
