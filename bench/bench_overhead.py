"""Host overhead of a Natural block beside a bare pydantic-ai agent run, import cost, prompt sizes.

Run: `python bench/bench_overhead.py` (with nighthawk installed or
PYTHONPATH=core). Prints figures; asserts nothing. The machine is noisy: compare ratios from one run. For an
A/B against another commit, run this file with that commit's `core` on PYTHONPATH, alternating.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time

from pydantic_ai import Agent, ToolOutput
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic import BaseModel

import nighthawk as nh

RUNS = 300


def one_round(messages: list, info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "result", "expression": "x + 1"}), ToolCallPart("nh_outcome", {"kind": "pass"})])


def tool_round(messages: list, info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": "x * 2"})])
    return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "result", "expression": "x + 1"}), ToolCallPart("nh_outcome", {"kind": "pass"})])


class Pass(BaseModel):
    kind: str


def scripted(script) -> FunctionModel:
    """The script as an async model function: neither side then pays for a worker thread per request
    (pydantic-ai sends a sync function to a thread; nighthawk sends it to the block's calling thread)."""

    async def model(messages: list, info: AgentInfo) -> ModelResponse:
        return script(messages, info)

    return FunctionModel(model)


def bare_agent(script) -> Agent:
    agent = Agent(scripted(script), output_type=[ToolOutput(Pass, name="nh_outcome")], instructions="system")

    @agent.tool_plain
    async def nh_eval(expression: str) -> str:
        return '{"value": 2, "error": null}'

    @agent.tool_plain
    async def nh_assign(target_path: str, expression: str) -> str:
        return '{"value": 2, "error": null}'

    return agent


def paired_ms(bare, ours, runs: int = RUNS) -> tuple[float, float, float]:
    """Medians of `bare` and `ours` and of their per-pair difference, calls alternating so that the noise of
    a shared machine hits both alike."""
    for _ in range(20):
        bare()
        ours()
    bare_samples, our_samples = [], []
    for _ in range(runs):
        started = time.perf_counter()
        bare()
        middle = time.perf_counter()
        ours()
        bare_samples.append((middle - started) * 1000)
        our_samples.append((time.perf_counter() - middle) * 1000)
    differences = [o - b for o, b in zip(our_samples, bare_samples)]
    return statistics.median(bare_samples), statistics.median(our_samples), statistics.median(differences)


@nh.natural_function
def block(x: int) -> int:
    result = 0
    """natural
    Set <:result> to <x> plus one.
    """
    return result


def measure(script, label: str, oversight: nh.oversight.Oversight | None = None) -> None:
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=scripted(script)))
    agent = bare_agent(script)
    loop = asyncio.new_event_loop()  # the bare agent gets a long-lived loop too, for a fair comparison
    with nh.run(executor), nh.scope(oversight=oversight):
        bare, ours, overhead = paired_ms(lambda: loop.run_until_complete(agent.run("user prompt")), lambda: block(1))
    print(f"{label:<28} bare agent {bare:6.2f} ms   natural block {ours:6.2f} ms   own overhead {overhead:5.2f} ms")


def prompt_sizes() -> None:
    seen: dict[str, object] = {}

    def capture(messages: list, info: AgentInfo) -> ModelResponse:
        seen["messages"], seen["info"] = messages, info
        return one_round(messages, info)

    from nighthawk.prompting._tokens import estimate_tokens

    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(capture)))
    with nh.run(executor):
        block(1)
    info = seen["info"]
    import json

    system = info.instructions or ""
    user = str(seen["messages"][0].parts[-1].content)
    tools = json.dumps([[t.name, t.description, t.parameters_json_schema] for t in info.function_tools])
    outputs = json.dumps([[t.name, t.description, t.parameters_json_schema] for t in info.output_tools])
    print(
        f"first request (estimated tokens): system {estimate_tokens(system)}, user {estimate_tokens(user)}, "
        f"function tools {estimate_tokens(tools)}, outcome tools {estimate_tokens(outputs)}"
    )


def import_time() -> None:
    env = {**os.environ}
    samples = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import nighthawk"], capture_output=True, text=True, env=env)
        line = [line for line in out.stderr.splitlines() if line.rstrip().endswith("| nighthawk")][-1]
        samples.append(int(line.split("|")[1]) / 1000)
    print(f"import nighthawk (python -X importtime, cumulative, median of 5): {statistics.median(samples):.1f} ms")


@nh.natural_function
def with_helper(x: int) -> int:
    def helper(y: int) -> int:
        """natural
        Set <:y> to <y> plus one.
        """
        return y

    return x


def nested_definition() -> None:
    """A natural function that defines a nested one pays for it at every call; no block runs here."""
    runs = 2_000
    started = time.perf_counter()
    for _ in range(runs):
        with_helper(1)
    per_call = (time.perf_counter() - started) / runs * 1e6
    print(f"call defining a nested natural function (no block runs): {per_call:.1f} µs")


if __name__ == "__main__":
    measure(one_round, "one round (assign + pass)")
    measure(tool_round, "one tool round, then finish")
    # The same under the runtime policies: the guard around the model's code, its value and the commit.
    measure(tool_round, "the same, read_only+no_network", nh.oversight.combine(nh.oversight.read_only(), nh.oversight.no_network()))
    prompt_sizes()
    import_time()
    nested_definition()
