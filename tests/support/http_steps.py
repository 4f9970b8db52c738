"""What the tests that run steps over HTTP against `openai_server.ScriptedOpenAIServer` share: the server
serving the `openai` providers, an executor on it, and the one answer most of them script."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from support.openai_server import NetworkRecorder, Reply, ScriptedOpenAIServer, tool_call


@contextmanager
def serving(
    monkeypatch: pytest.MonkeyPatch, *, lifetime: float, api_key: str | None = "test-key"
) -> Iterator[ScriptedOpenAIServer]:
    """A scripted server the OpenAI providers point at (with `api_key`, or none as a local server needs),
    model requests allowed; fails the test if anything reached beyond loopback meanwhile."""
    with NetworkRecorder() as network, ScriptedOpenAIServer(lifetime=lifetime) as scripted, override_allow_model_requests(True):
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        if api_key is not None:
            monkeypatch.setenv("OPENAI_API_KEY", api_key)
        yield scripted
    assert network.non_loopback == [], "the test reached beyond loopback"


def http_executor(**configuration: object) -> nh.AgentStepExecutor:
    """An executor on the server's Chat Completions model."""
    config = nh.StepExecutorConfiguration(model="openai-chat:gpt-test", **configuration)  # type: ignore[arg-type]
    return nh.AgentStepExecutor.from_configuration(configuration=config)


def assign_and_pass(expression: str = "x + 1") -> Reply:
    """One response carrying the write and the outcome: the block finishes in one request."""
    return Reply(
        calls=[tool_call("nh_assign", target_path="y", expression=expression), tool_call("nh_outcome", kind="pass")]
    )
