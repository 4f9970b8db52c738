"""A provider's 429 slows the whole `nighthawk.map` down, against a local OpenAI-compatible server.

The SDK's own retries are off (`max_retries=0`), so each 429 reaches the map, which waits as the server's
`retry-after-ms` says before launching anything more, and runs the refused items again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from support import openai_server  # tests/ is on the path (pytest `pythonpath`)

Reply, Status, tool_call = openai_server.Reply, openai_server.Status, openai_server.tool_call

BURST = 6
WAIT_MS = 300
CONCURRENCY = 8


pytestmark = pytest.mark.usefixtures("fresh_session_store")


class Provider:
    """Answers 429 (retry-after-ms) to the first `BURST` requests, then returns `text.upper()`; notes when
    each request arrived and when the first refusal was sent."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrivals: list[float] = []
        self.first_refusal: float | None = None

    def __call__(self, request: openai_server.RecordedRequest) -> openai_server.ScriptItem:
        with self.lock:
            now = time.monotonic()
            self.arrivals.append(now)
            if request.index < BURST:
                self.first_refusal = self.first_refusal or now
                return Status(429, "rate limited", retry_after_ms=WAIT_MS)
        return Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper()")])


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Provider, openai_server.ScriptedOpenAIServer]]:
    monkeypatch.setenv("NIGHTHAWK_TOKENIZER", "estimate")  # gpt-test's vocabulary would be downloaded
    script = Provider()
    with openai_server.ScriptedOpenAIServer(script, lifetime=50.0) as server, override_allow_model_requests(True):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield script, server


def executor() -> nh.AgentStepExecutor:
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-test", max_retries=0)
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


@nh.natural_function
async def shout_async(text: str) -> str:
    """natural
    Shout <text>.
    """


TEXTS = [f"word {n}" for n in range(24)]


@pytest.mark.parametrize("function", [shout, shout_async], ids=["sync", "async"])
def test_rate_limited_items_wait_as_told_and_then_succeed(function, provider) -> None:
    script, server = provider
    with nh.run(executor()):
        result = nh.map(function, TEXTS, concurrency=CONCURRENCY, retries=1, progress=False)
    assert list(result) == [text.upper() for text in TEXTS]
    assert server.request_count == len(TEXTS) + BURST
    # Requests of the first wave were sent before any refusal came back; every later one waited.
    assert script.first_refusal is not None
    later = script.arrivals[CONCURRENCY:]
    assert min(later) - script.first_refusal >= WAIT_MS / 1000


def test_a_rate_limited_item_runs_again_whatever_retries_says(provider) -> None:
    script, server = provider
    with nh.run(executor()):
        result = nh.map(shout, TEXTS, concurrency=CONCURRENCY, retries=0, progress=False)
    assert list(result) == [text.upper() for text in TEXTS]
    assert server.request_count == len(TEXTS) + BURST
