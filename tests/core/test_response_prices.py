"""What each response of a step costs: priced from pydantic-ai's price data, and a model that data does not know
(a local server's, a fine-tune) is not looked up again at every step (core/nighthawk/model/_direct.py).

Steps run over HTTP against the test suite's local OpenAI-compatible server, through the real OpenAI client.
"""

from __future__ import annotations

import pytest
from genai_prices.data_snapshot import DataSnapshot

import nighthawk as nh
from nighthawk.model import _direct
from nighthawk.prompting import _tokens
from support.http_steps import assign_and_pass, http_executor, serving


@nh.natural_function
def increment(x: int) -> int:
    y = 0
    """natural
    Set <:y> to <x> + 1.
    """
    return y


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model names looked up in the price data, in order."""
    seen: list[str] = []
    original = DataSnapshot.find_provider_model

    def counting(self, model_ref, *args, **kwargs):
        seen.append(model_ref)
        return original(self, model_ref, *args, **kwargs)

    monkeypatch.setattr(DataSnapshot, "find_provider_model", counting)
    monkeypatch.setattr(_direct, "_unpriced", {}, raising=False)  # what earlier tests found unpriced
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")
    return seen


def _executor(model: str) -> nh.AgentStepExecutor:
    return http_executor() if model == "gpt-test" else nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model=f"openai-chat:{model}")
    )


def test_steps_to_a_model_without_a_price_stop_looking_it_up(monkeypatch, lookups) -> None:
    with serving(monkeypatch, lifetime=50.0) as server:
        server.push(*[assign_and_pass() for _ in range(6)])
        with nh.run(_executor("gpt-test")), nh.budget() as spent:
            assert [increment(x) for x in range(2)] == [1, 2]
            looked_up = len(lookups)
            assert [increment(x) for x in range(2, 6)] == [3, 4, 5, 6]
    assert looked_up > 0
    assert len(lookups) == looked_up  # the later steps did not look again
    assert (spent.spent.requests, spent.spent.cost_usd) == (6, None)  # and their cost is still unknown


def test_steps_to_a_priced_model_are_priced_at_every_response(monkeypatch, lookups) -> None:
    with serving(monkeypatch, lifetime=50.0) as server:
        server.push(*[assign_and_pass() for _ in range(4)])
        with nh.run(_executor("gpt-4o")), nh.budget() as spent:
            assert [increment(x) for x in range(4)] == [1, 2, 3, 4]
    assert spent.spent.unpriced_requests == 0
    assert spent.spent.cost_usd is not None and spent.spent.cost_usd > 0
