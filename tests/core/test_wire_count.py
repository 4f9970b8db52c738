"""Every request the provider saw is counted in a map's usage, however the model was given and however the
map ended (`nighthawk.model._wire_count`).

Against the test suite's local OpenAI-compatible server, through the real OpenAI client: the server's own
count of requests is the truth the usage must equal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import httpx2
import pytest
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import nighthawk as nh
from nighthawk.prompting import _tokens
from support import openai_server

Reply, Status, tool_call = openai_server.Reply, openai_server.Status, openai_server.tool_call

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(120)]

TEXTS = [f"word {n}" for n in range(12)]
RETURN_SHOUT = Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper()")])
SETTLE_S = 10.0
"""At most this long for the cancelled items of a stopped map to hand in what they spent (they unwind on
the background loop after the map has raised); only a bound, the wait ends as soon as they have."""


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[object], openai_server.ScriptedOpenAIServer]]:
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")  # gpt-test's vocabulary would be downloaded
    servers: list[openai_server.ScriptedOpenAIServer] = []

    def start(script: object) -> openai_server.ScriptedOpenAIServer:
        server = openai_server.ScriptedOpenAIServer(script, lifetime=100.0)  # type: ignore[arg-type]
        servers.append(server.start())
        return server

    with override_allow_model_requests(True):
        yield start
    for server in servers:
        server.stop()


def model_object(server: openai_server.ScriptedOpenAIServer, http_client: httpx2.AsyncClient | None = None) -> nh.AgentStepExecutor:
    """The form docs/providers.md shows: a pydantic-ai model object with its own provider (and HTTP client)."""
    provider = OpenAIProvider(base_url=server.base_url, api_key="test-key", http_client=http_client)
    model = OpenAIChatModel("gpt-test", provider=provider)
    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))


def first_two_fail(request: openai_server.RecordedRequest) -> openai_server.ScriptItem:
    # Two 500s the OpenAI SDK retries by itself (twice, by default) before the third answer.
    return Status(500, "busy") if request.index < 2 else RETURN_SHOUT


def test_the_sdk_retries_of_a_model_object_are_counted(serve) -> None:
    server = serve(first_two_fail)
    with nh.run(model_object(server)):
        result = nh.map(shout, TEXTS[:3], concurrency=1, progress=False)
    assert list(result) == [text.upper() for text in TEXTS[:3]]
    assert result.usage.requests == server.request_count == 5
    assert result.usage.failed_requests == 2


def test_the_sdk_retries_through_the_users_own_http_client_are_counted(serve) -> None:
    server = serve(first_two_fail)
    with nh.run(model_object(server, httpx2.AsyncClient())):
        result = nh.map(shout, TEXTS[:3], concurrency=1, progress=False)
    assert result.usage.requests == server.request_count == 5


class FirstAnsweredOnceAllArrived:
    """Holds the first `waiting` requests until all have arrived, then answers the first with `first` at once
    and the others a moment later, as a provider that had them all in hand does."""

    def __init__(self, waiting: int, first: openai_server.ScriptItem) -> None:
        self.waiting = waiting
        self.first: list[openai_server.ScriptItem] = [first]
        self.arrived = threading.Barrier(waiting, timeout=30)
        self.lock = threading.Lock()

    def __call__(self, request: openai_server.RecordedRequest) -> openai_server.ScriptItem:
        if request.index >= self.waiting:
            return RETURN_SHOUT
        self.arrived.wait()
        with self.lock:
            first = self.first.pop() if self.first else None
        if first is not None:
            return first
        time.sleep(0.5)
        return RETURN_SHOUT


def settled_requests(usage: nh.UsageTotals, expected: int) -> int:
    """`usage.requests` once it reaches `expected`, or after `SETTLE_S`, whichever comes first."""
    deadline = time.monotonic() + SETTLE_S
    while usage.requests < expected and time.monotonic() < deadline:
        time.sleep(0.02)
    return usage.requests


def test_the_requests_in_flight_when_a_map_stops_are_counted(serve, monkeypatch) -> None:
    server = serve(FirstAnsweredOnceAllArrived(4, Status(401, "key revoked")))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-test", max_retries=0)
    with nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)), pytest.raises(nh.MapStoppedError) as caught:
        nh.map(shout, TEXTS, concurrency=4, progress=False)
    assert server.request_count == 4
    assert settled_requests(caught.value.partial.usage, 4) == 4


def test_the_requests_in_flight_when_a_map_of_a_model_object_stops_are_counted(serve) -> None:
    server = serve(FirstAnsweredOnceAllArrived(4, Status(401, "key revoked")))
    with nh.run(model_object(server)), pytest.raises(nh.MapStoppedError) as caught:
        nh.map(shout, TEXTS, concurrency=4, progress=False)
    assert server.request_count == 4
    assert settled_requests(caught.value.partial.usage, 4) == 4


def test_the_requests_in_flight_when_a_budget_stops_a_map_are_counted(serve) -> None:
    # The first answer spends the whole budget: the next item may not send, and the map stops.
    server = serve(FirstAnsweredOnceAllArrived(4, RETURN_SHOUT))
    with nh.run(model_object(server)), nh.budget(total_tokens=1), pytest.raises(nh.BudgetExceededError) as caught:
        nh.map(shout, TEXTS, concurrency=4, progress=False)
    assert server.request_count == 4
    assert settled_requests(caught.value.partial.usage, 4) == 4
