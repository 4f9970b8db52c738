"""Group budgets under concurrency: a `nighthawk.budget(...)` holds however many steps are in flight.

The models are async and scripted, with a small delay, so many requests really are in flight at once; they
count the requests that reach them, which is what a provider would bill.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import nighthawk as nh


pytestmark = pytest.mark.usefixtures("fresh_session_store")


class Model:
    """Answers `a + b` after `rounds` requests that each evaluate an expression; every response is priced as
    gpt-4o with 1,000 tokens in and 500 out ($0.0075)."""

    def __init__(self, *, rounds: int = 1, delay_s: float = 0.005) -> None:
        self.rounds = rounds
        self.delay_s = delay_s
        self.requests = 0
        self._lock = threading.Lock()  # the threads test runs steps on several loops

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        with self._lock:
            self.requests += 1
        await asyncio.sleep(self.delay_s)
        answered = sum(1 for message in messages if getattr(message, "kind", "") == "response")
        if answered + 1 < self.rounds:
            # A new expression each round: the same call three times in a row would end the step first.
            parts = [ToolCallPart("nh_eval", {"expression": f"a + {answered}"})]
        else:
            parts = [ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "a + b"})]
        return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=1000, output_tokens=500), provider_name="openai")

    def executor(self) -> nh.AgentStepExecutor:
        model = FunctionModel(self, model_name="gpt-4o")
        return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))


@nh.natural_function
def add(a: int, b: int) -> int:
    """natural
    Add <a> and <b>.
    """


@nh.natural_function
async def add_async(a: int, b: int) -> int:
    """natural
    Add <a> and <b>.
    """


SYNC_AND_ASYNC = pytest.mark.parametrize("function", [add, add_async], ids=["sync", "async"])


@SYNC_AND_ASYNC
def test_a_request_budget_around_a_concurrent_map_sends_exactly_its_requests(function: object) -> None:
    model = Model()
    with nh.run(model.executor()), nh.budget(requests=100):
        with pytest.raises(nh.BudgetExceededError, match=r"cell budget `requests` of 100 was reached \(100\)"):
            nh.map(function, range(300), range(300), concurrency=32, progress=False)  # type: ignore[arg-type]
    assert model.requests == 100


@pytest.mark.parametrize("on_error", ["raise", "collect"])
def test_a_map_stopped_by_its_budget_keeps_the_finished_results_on_the_error(on_error: str) -> None:
    model = Model()
    with nh.run(model.executor()), nh.budget(requests=100):
        with pytest.raises(nh.BudgetExceededError) as caught:
            nh.map(add, range(300), range(300), concurrency=32, on_error=on_error, retries=3, progress=False)  # type: ignore[arg-type]
    partial = caught.value.partial
    finished = {index: value for index, value in enumerate(partial) if value is not None}
    assert finished == {index: 2 * index for index in finished}
    # Every request went to an item; at most the 31 other items in flight at the stop did not finish.
    assert len(finished) >= 100 - 31


def test_a_map_stopped_by_its_budget_runs_only_the_missing_items_next_time() -> None:
    model = Model()
    with nh.run(model.executor()):
        with nh.budget(requests=100), pytest.raises(nh.BudgetExceededError) as caught:
            nh.map(add, range(300), range(300), concurrency=32, progress=False)
        kept = sum(1 for value in caught.value.partial if value is not None)
        result = nh.map(add, range(300), range(300), concurrency=32, progress=False)
    assert list(result) == [2 * k for k in range(300)]
    assert model.requests == 100 + 300 - kept


def test_plain_threads_sharing_a_request_budget_send_exactly_its_requests() -> None:
    model = Model()
    stops: list[BaseException] = []

    def work(start: int) -> None:
        try:
            for k in range(start, start + 100):
                add(k, k)
        except nh.BudgetExceededError as exc:
            stops.append(exc)

    with nh.run(model.executor()), nh.budget(requests=100):
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(work, 1000 * n)) for n in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert model.requests == 100
    assert len(stops) == 8


def test_a_cost_budget_lets_no_new_request_start_once_it_is_reached() -> None:
    # Each item takes 5 requests of $0.0075; $0.05 is reached by the 7th response. After that only the
    # requests already in flight (one per other item: 3) may still be answered.
    model = Model(rounds=5)
    with nh.run(model.executor()), nh.budget(cost_usd=0.05):
        with pytest.raises(nh.BudgetExceededError, match=r"cell budget `cost_usd`"):
            nh.map(add, range(20), range(20), concurrency=4, progress=False)
    assert model.requests <= 7 + 3
