"""Time a Natural block answered from a replay store against the same block on a bare scripted model.

Run with `PYTHONPATH=core python bench/bench_replay.py`. Both sides run the real agent executor in the same
process; the bare side answers with an instant `FunctionModel`, the replay side with a `ReplayModel` in
`replay` mode over a store recorded from that model just before. Prints medians per block and the ratio,
for a block of one request and a block with one tool round (two requests).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.replay import replay_executor

RUNS = 200
WARMUP = 20


@nh.natural_function
def double(x: int) -> int:
    """natural
    Set <:y> to twice <x>.
    """
    return y  # noqa: F821 - bound by the block's commit


def scripted(tool_round: bool) -> FunctionModel:
    """An instant model: assign and finish in one response, or assign, then finish after the tool result."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assign = ToolCallPart("nh_assign", {"target_path": "y", "expression": "x * 2"})
        finish = ToolCallPart("nh_pass", {"kind": "pass"})
        if not tool_round:
            return ModelResponse(parts=[assign, finish])
        answered = sum(1 for message in messages if message.kind == "response")
        return ModelResponse(parts=[assign] if answered == 0 else [finish])

    return FunctionModel(answer)


def median_ms(executor: nh.AgentStepExecutor, runs: int = RUNS) -> float:
    times = []
    with nh.run(executor):
        for _ in range(WARMUP):
            double(21)
        for _ in range(runs):
            start = time.perf_counter()
            assert double(21) == 42
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def executor_on(model: FunctionModel) -> nh.AgentStepExecutor:
    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))


def main() -> None:
    warnings.simplefilter("ignore")  # the offline tokenizer fallback warns once
    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        for label, tool_round in (("one request", False), ("one tool round", True)):
            store = Path(folder) / f"{label.replace(' ', '_')}.replay.yaml"
            with nh.run(replay_executor(store, "record", model=scripted(tool_round))):
                double(21)
            bare: Callable[[], float] = lambda: median_ms(executor_on(scripted(tool_round)))  # noqa: E731
            replayed: Callable[[], float] = lambda: median_ms(replay_executor(store, "replay"))  # noqa: E731
            # Alternate the two sides so drift on a noisy machine hits both alike.
            pairs = [(bare(), replayed()) for _ in range(3)]
            rows.append((label, statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)))
    print(f"Median time per block (median of 3 alternating series of {RUNS} runs), real agent executor:")
    print(f"{'block':<16}{'bare FunctionModel':>20}{'replay store':>16}{'ratio':>8}")
    for label, bare_ms, replay_ms in rows:
        print(f"{label:<16}{bare_ms:>17.2f} ms{replay_ms:>13.2f} ms{replay_ms / bare_ms:>7.2f}x")


if __name__ == "__main__":
    main()
