"""What each request costs the client: the SDK client is made once per model, not copied per request.

A `max_retries` in a request's settings makes pydantic-ai copy the OpenAI client for that request
(`with_options`), so the retry count goes on the client the executor builds, once; behaviour (how many
attempts a failing request gets) stays the configured one.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from support.http_steps import assign_and_pass, http_executor, serving
from support.openai_server import Status

import nighthawk as nh


@nh.natural_function
def count_up(x: int) -> int:
    y = x
    """natural
    Store <x> plus one in <:y>.
    """
    return y


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    with serving(monkeypatch, lifetime=40.0) as scripted:
        yield scripted


@pytest.fixture
def client_copies(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every `AsyncOpenAI.with_options` call (a copy of the client) made while the test runs."""
    copies: list[dict[str, Any]] = []
    original = openai.AsyncOpenAI.with_options

    def counting(self: openai.AsyncOpenAI, **options: Any) -> openai.AsyncOpenAI:
        copies.append(options)
        return original(self, **options)

    monkeypatch.setattr(openai.AsyncOpenAI, "with_options", counting)
    monkeypatch.setattr(openai.AsyncOpenAI, "copy", counting)
    return copies



def test_requests_with_the_default_retries_do_not_copy_the_client(server, client_copies) -> None:
    server.push(*[assign_and_pass() for _ in range(3)])
    with nh.run(http_executor()):
        assert [count_up(n) for n in range(3)] == [1, 2, 3]
    assert server.request_count == 3
    assert client_copies == []


def test_configured_retries_still_bound_the_attempts_without_a_client_copy(server, client_copies) -> None:
    server.push(*[Status(500)] * 5)
    with nh.run(http_executor(max_retries=1)), pytest.raises(nh.ExecutionError, match="HTTP 500"):
        count_up(1)
    assert server.request_count == 2  # the first attempt and one retry
    assert client_copies == []


def test_a_retry_count_in_model_settings_wins_over_the_configured_one(server) -> None:
    server.push(*[Status(500)] * 5)
    executor = http_executor(max_retries=3, model_settings={"max_retries": 0})
    with nh.run(executor), pytest.raises(nh.ExecutionError, match="HTTP 500"):
        count_up(1)
    assert server.request_count == 1


def test_changing_the_retries_gives_an_executor_whose_client_retries_that_often(server) -> None:
    server.push(assign_and_pass(), *[Status(500)] * 5)
    first = http_executor(max_retries=3)
    with nh.run(first):
        assert count_up(1) == 2  # the first executor's client is built, with 3 retries
    executor = first.with_configuration(nh.StepExecutorConfiguration(model="openai-chat:gpt-test", max_retries=0))
    with nh.run(executor), pytest.raises(nh.ExecutionError, match="HTTP 500"):
        count_up(1)
    assert server.request_count == 2  # one success, then a single attempt
