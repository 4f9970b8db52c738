"""What the batch-map tests share: a two-round `shout` over the local batch server, its executor per provider,
and the environment a batch map runs in (no key of the user's, answers polled every 50 ms).

The scripted model needs two rounds per item (an `nh_eval`, then the outcome), so a map of N items makes two
batches of N lines: the second round goes out once the first has come back.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from support.batch_server import BatchServer
from support.openai_server import RecordedRequest, Reply, ScriptItem, tool_call

__all__ = ["EXPECTED", "MODELS", "TEXTS", "environment", "executor", "provider", "serve", "shout", "two_rounds"]

TEXTS = [f"word {n}" for n in range(12)]
EXPECTED = [text.upper() + "!" for text in TEXTS]


def two_rounds(request: RecordedRequest) -> ScriptItem:
    """First round: evaluate an expression; second round: return from it."""
    if not request.tool_results:
        return Reply(calls=[tool_call("nh_eval", expression="text.upper()")])
    return Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper() + '!'")])


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


MODELS = {"openai": "openai-chat:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}


def executor(model: str = MODELS["openai"]) -> nh.AgentStepExecutor:
    """An executor for `model` (a key of `MODELS` or a model name) that does not retry: a failed request is seen once."""
    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=MODELS.get(model, model), max_retries=0))


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.setenv("NIGHTHAWK_TOKENIZER", "estimate")
    monkeypatch.setenv("NIGHTHAWK_BATCH_POLL_S", "0.05")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with override_allow_model_requests(True):
        yield monkeypatch


def serve(environment: pytest.MonkeyPatch, server: BatchServer) -> BatchServer:
    """Start `server` and point both providers' SDKs at it."""
    environment.setenv("OPENAI_BASE_URL", server.start().base_url)
    environment.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    return server
