"""What a coding agent costs Nighthawk itself, measured with the test suite's fake agents (no real agent).

Run with `PYTHONPATH=core:tests python bench/bench_agents.py`. Prints the median wall time of one block that
ends at once, and of one that makes ten `nh_eval` calls, through: a scripted `FunctionModel` (the API-model
path without the network), the fake Claude Agent SDK (in this process: the MCP bridge's own cost), and the
fake `claude` program (a child process per turn, as the real CLI is). A real agent adds its own start-up and
its model's thinking on top of these.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from support import fake_agent

RUNS = 7
CALLS = 10


@nh.natural_function
def compute(x: int) -> int:
    """natural
    Return ten times <x>.
    """
    return -1


def scripted(calls: int) -> nh.AgentStepExecutor:
    def respond(messages: list, info: object) -> ModelResponse:
        sent = sum(1 for message in messages if getattr(message, "kind", "") == "response")
        if sent < calls:
            return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": "x + 1"})])
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "x * 10"})])

    return nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=FunctionModel(respond)))


def median_ms(executor: nh.AgentStepExecutor) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        with nh.run(executor):
            assert compute(3) == 30
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="nighthawk-bench-agents-"))
    program = folder / "claude"
    support = Path(fake_agent.__file__).parent
    program.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(support)!r})\nimport fake_agent\nfake_agent.main_claude()\n")
    program.chmod(0o755)
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
    os.environ["FAKE_AGENT_LOG"] = str(folder / "log.jsonl")
    os.environ["FAKE_AGENT_SCENARIO"] = str(folder / "scenario.json")
    os.environ["FAKE_AGENT_PIDFILE"] = str(folder / "agent.pid")
    sys.modules["claude_agent_sdk"] = fake_agent.fake_sdk_module()
    finish = {"call": "nh_outcome", "arguments": {"kind": "return", "return_expression": "x * 10"}}
    evaluate = {"call": "nh_eval", "arguments": {"expression": "x + 1"}}
    print(f"median of {RUNS} blocks, ms        0 tool calls   {CALLS} tool calls")
    with override_allow_model_requests(True):
        rows = {"FunctionModel (API path)": [median_ms(scripted(0)), median_ms(scripted(CALLS))]}
        for backend in ("claude-code-sdk", "claude-code-cli"):
            executor = nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=f"{backend}:default"))
            row = []
            for calls in (0, CALLS):
                (folder / "scenario.json").write_text(json.dumps({"turns": [[evaluate] * calls + [finish]]}))
                row.append(median_ms(executor))
            rows[f"fake {backend}"] = row
    for name, (none, some) in rows.items():
        print(f"{name:<32}{none:>10.1f}{some:>16.1f}")


if __name__ == "__main__":
    main()
