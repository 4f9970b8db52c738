"""Block time with very large values in scope, as a ratio to the same block with small values.

Run: `python bench/bench_large_values.py` (nighthawk installed or PYTHONPATH=core). Prints figures only.
Also prints first-request sizes of three reference blocks.
"""

from __future__ import annotations

import json
import statistics
import time

from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.prompting._tokens import estimate_tokens

RUNS = 150


def script(messages: list, info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "size", "expression": "len(data)"}), ToolCallPart("nh_outcome", {"kind": "pass"})])


@nh.natural_function
def measure_block(data: object) -> int:
    size = 0
    """natural
    Store the length of <data> in <:size>.
    """
    return size


def block_ratios() -> None:
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(script)))
    cases = {
        "small list (10)": list(range(10)),
        "list 10^6": list(range(10**6)),
        "list 10^7": list(range(10**7)),
        "dict 10^5 keys": {f"k{i}": i for i in range(10**5)},
        "str 100 MB": "x" * (100 * 10**6),
        "bytes 100 MB": b"x" * (100 * 10**6),
    }
    samples: dict[str, list[float]] = {label: [] for label in cases}
    with nh.run(executor):
        for data in cases.values():
            measure_block(data)  # warm up every path once
        # Round-robin over the cases so that machine noise hits every case alike.
        for _ in range(RUNS):
            for label, data in cases.items():
                started = time.perf_counter()
                measure_block(data)
                samples[label].append((time.perf_counter() - started) * 1000)
    base = statistics.median(samples["small list (10)"])
    for label, values in samples.items():
        ms = statistics.median(values)
        print(f"{label:<18} {ms:7.2f} ms  ratio {ms / base:4.2f}x")


def reference_prompts() -> None:
    captured: list[tuple[str, str, int]] = []

    def capture(messages: list, info: AgentInfo) -> ModelResponse:
        tools = json.dumps([[t.name, t.description, t.parameters_json_schema] for t in [*info.function_tools, *info.output_tools]])
        captured.append((info.instructions or "", str(messages[0].parts[-1].content), estimate_tokens(tools)))
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])

    @nh.natural_function
    def read_compute_write(prices: list[float], rate: float) -> float:
        total = 0.0
        """natural
        Add up <prices>, apply the tax <rate>, and store the result in <:total>.
        """
        return total

    @nh.natural_function
    def loop_block(rows: list[dict]) -> list[dict]:
        kept = []
        for row in rows:
            """natural
            If <row> has no email, continue; if it is marked final, break.
            """
            kept.append(row)
        return kept

    def normalise(name: str) -> str:
        """Lower-case a name and strip spaces."""
        return name.strip().lower()

    @nh.natural_function
    def callable_block(names: list[str]) -> list[str]:
        cleaned: list[str] = []
        """natural
        Use <normalise> on each of <names> and store the results in <:cleaned>.
        """
        return cleaned

    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(capture)))
    with nh.run(executor):
        read_compute_write([1.0, 2.5], 0.2)
        loop_block([{"email": "a@b.c", "final": True}])
        callable_block([" Ada ", "GRACE"])
    for label, (system, user, tools) in zip(["read-compute-write", "loop with break/continue", "callable binding"], captured):
        total = estimate_tokens(system) + estimate_tokens(user) + tools
        print(f"{label:<26} first request ~{total} tokens (system {estimate_tokens(system)}, user {estimate_tokens(user)}, tool schemas {tools})")


if __name__ == "__main__":
    block_ratios()
    reference_prompts()
