"""What a `nighthawk.map` pays when inputs repeat, and how soon it gives up when the provider is unreachable.

Run: `python bench/bench_map_cost.py` (with nighthawk installed or PYTHONPATH=core). Prints figures; asserts
nothing.

(a) 600 items with 30 distinct inputs, concurrency 32, through a natural function whose model needs two
    requests per call (an `nh_eval`, then the outcome), each answered after 20 ms by a scripted model: the
    requests sent (one call per distinct input: 60) and the items answered by another item.
(b) 1,000 items with `on_error="collect"` against a loopback port where nothing listens, through the real
    OpenAI client with its default retries: the time until the map stops, and what it said.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh


@nh.natural_function
def route(ticket: str) -> str:
    """natural
    Look at <ticket>, then name the team that handles it.
    """


class TwoRequests:
    """Every call: first an `nh_eval` of the ticket, then a return outcome; counts the requests."""

    def __init__(self) -> None:
        self.requests = 0

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        await asyncio.sleep(0.02)
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": "len(ticket)"})])
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "ticket.split()[0]"})])


def repeated_inputs() -> None:
    model = TwoRequests()
    tickets = [f"team{n % 30} needs help with case {n % 30}" for n in range(600)]
    executor = nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model=FunctionModel(model, model_name="scripted"))
    )
    started = time.perf_counter()
    with nh.run(executor):
        result = nh.map(route, tickets, concurrency=32, progress=False)
    took = time.perf_counter() - started
    shared = getattr(result.usage, "items_shared", "n/a")
    print(f"(a) 600 items, 30 distinct, 2 requests per call: {model.requests} requests "
          f"(goal 60), {shared} items answered by another item, {took:.2f} s")


def dead_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{port}/v1"
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")
    os.environ["NIGHTHAWK_TOKENIZER"] = "estimate"
    executor = nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model="openai-chat:gpt-bench")
    )
    started = time.perf_counter()
    outcome = "finished"
    with override_allow_model_requests(True), nh.run(executor):
        try:
            result = nh.map(route, [f"ticket {n}" for n in range(1_000)], on_error="collect", progress=False)
            outcome = f"ran to the end with {len(result.errors)} failed items"
        except nh.NighthawkError as exc:
            outcome = f"{type(exc).__name__}: {str(exc)[:160]}..."
    print(f"(b) 1,000 items against a dead port: stopped after {time.perf_counter() - started:.2f} s (goal <= 5 s)")
    print(f"    {outcome}")


if __name__ == "__main__":
    repeated_inputs()
    dead_port()
