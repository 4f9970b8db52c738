"""Host overhead of a Natural block beside a bare pydantic-ai agent run, import cost, prompt sizes.

Run: `NIGHTHAWK_TOKENIZER=estimate python bench/bench_overhead.py` (with nighthawk installed or
PYTHONPATH=core). Prints figures; asserts nothing. The machine is noisy: compare ratios from one run.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")

from pydantic_ai import Agent, ToolOutput  # noqa: E402
from pydantic_ai.messages import ModelResponse, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic import BaseModel  # noqa: E402

import nighthawk as nh  # noqa: E402

RUNS = 300


def one_round(messages: list, info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "result", "expression": "x + 1"}), ToolCallPart("nh_pass", {"kind": "pass"})])


def tool_round(messages: list, info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": "x * 2"})])
    return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "result", "expression": "x + 1"}), ToolCallPart("nh_pass", {"kind": "pass"})])


class Pass(BaseModel):
    kind: str


def bare_agent(script) -> Agent:
    agent = Agent(FunctionModel(script), output_type=[ToolOutput(Pass, name="nh_pass")], instructions="system")

    @agent.tool_plain
    def nh_eval(expression: str) -> str:
        return '{"value": 2, "error": null}'

    @agent.tool_plain
    def nh_assign(target_path: str, expression: str) -> str:
        return '{"value": 2, "error": null}'

    return agent


def median_ms(function, runs: int = RUNS) -> float:
    for _ in range(20):
        function()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


@nh.natural_function
def block(x: int) -> int:
    result = 0
    """natural
    Set <:result> to <x> plus one.
    """
    return result


def measure(script, label: str) -> None:
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(script)))
    agent = bare_agent(script)
    loop = asyncio.new_event_loop()  # the bare agent gets a long-lived loop too, for a fair comparison
    bare = median_ms(lambda: loop.run_until_complete(agent.run("user prompt")))
    with nh.run(executor):
        ours = median_ms(lambda: block(1))
    print(f"{label:<28} bare agent {bare:6.2f} ms   natural block {ours:6.2f} ms   own overhead {ours - bare:5.2f} ms")


def prompt_sizes() -> None:
    seen: dict[str, object] = {}

    def capture(messages: list, info: AgentInfo) -> ModelResponse:
        seen["messages"], seen["info"] = messages, info
        return one_round(messages, info)

    from nighthawk._tokens import estimate_tokens

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
        f"first request (estimated tokens, ~4 bytes each): system {estimate_tokens(system)}, user {estimate_tokens(user)}, "
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


if __name__ == "__main__":
    measure(one_round, "one round (assign + pass)")
    measure(tool_round, "one tool round, then finish")
    prompt_sizes()
    import_time()
