"""Missing credentials: the default model fails at the first step, before any network call, and says why."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

import nighthawk as nh
from nighthawk import events


@nh.natural_function
def summarise(text: str) -> str:
    """natural
    Set <:summary> to a one-line summary of <text>.
    """
    return summary  # noqa: F821 - bound by the block's commit


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every attempt to resolve a host or open a connection, each of which fails."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args[1:] if args else kwargs)
        raise OSError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: refuse(None, *args))
    monkeypatch.setattr(socket, "create_connection", lambda *args, **kwargs: refuse(None, *args))
    yield attempts


def test_default_configuration_uses_an_openai_model() -> None:
    assert nh.StepExecutorConfiguration().model.startswith("openai")


def test_building_the_default_executor_needs_no_key(no_key: None, connections: list[object]) -> None:
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration())
    with nh.run(executor):
        pass
    assert connections == []


def test_first_step_without_key_names_the_variable(no_key: None) -> None:
    with nh.run(nh.AgentStepExecutor()):
        with pytest.raises(nh.NighthawkError, match=r"needs an API key in the environment variable `OPENAI_API_KEY`"):
            summarise("a long text")


def test_missing_key_message_says_how_to_choose_another_model(no_key: None) -> None:
    with nh.run(nh.AgentStepExecutor()):
        with pytest.raises(
            nh.NighthawkError,
            match=r"choose another model with `StepExecutorConfiguration\(model='provider:model'\)` "
            r"\(in a notebook: `%nighthawk model provider:model`\)",
        ):
            summarise("a long text")


def test_missing_key_fails_before_any_network_access(no_key: None, connections: list[object]) -> None:
    with nh.run(nh.AgentStepExecutor()):
        with pytest.raises(nh.NighthawkError, match="OPENAI_API_KEY"):
            summarise("a long text")
    assert connections == []


def test_missing_key_commits_nothing() -> None:
    @nh.natural_function
    def keep() -> str:
        summary = "before"
        try:
            """natural
            Set <:summary> to something new.
            """
        except nh.NighthawkError:
            pass
        return summary

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_API_KEY", raising=False)
        patch.delenv("OPENAI_BASE_URL", raising=False)
        with nh.run(nh.AgentStepExecutor()):
            assert keep() == "before"


def test_missing_key_of_another_provider_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    configuration = nh.StepExecutorConfiguration(model="anthropic:claude-sonnet-4-5")
    with nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)):
        with pytest.raises(nh.NighthawkError, match=r"`ANTHROPIC_API_KEY`, which is not set"):
            summarise("a long text")


def test_missing_key_is_not_reported_when_a_key_is_set(monkeypatch: pytest.MonkeyPatch, connections: list[object]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-used")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with nh.run(nh.AgentStepExecutor()):
        with pytest.raises(Exception) as caught:  # refused later: ALLOW_MODEL_REQUESTS or the network guard
            summarise("a long text")
    assert "OPENAI_API_KEY" not in str(caught.value)


def step_failures(model: str) -> list[tuple[str, str]]:
    """`(error_type, error_kind)` of each failed step when `summarise` runs with `model`, which cannot be used."""
    failures: list[tuple[str, str]] = []

    def record(event: object) -> None:
        if isinstance(event, events.StepFailed):
            failures.append((event.error_type, event.error_kind))

    configuration = nh.StepExecutorConfiguration(model=model)
    with events.listen(record), nh.run(nh.AgentStepExecutor(configuration)):
        with pytest.raises(nh.ModelConfigurationError):
            summarise("a long text")
    return failures


def test_missing_key_is_a_configuration_failure_not_an_internal_one(no_key: None) -> None:
    assert step_failures("openai-chat:gpt-4.1") == [("ModelConfigurationError", "configuration")]


def test_unknown_provider_is_a_configuration_failure_not_an_internal_one(connections: list[object]) -> None:
    assert step_failures("opnai:gpt-4.1") == [("ModelConfigurationError", "configuration")]
    assert connections == []
