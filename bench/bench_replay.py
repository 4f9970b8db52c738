"""Time a Natural block answered from a replay store against the same block on a bare scripted model, and
the costs of a large store.

Run with `PYTHONPATH=core python bench/bench_replay.py`. Both sides run the real agent executor in the same
process; the bare side answers with an instant `FunctionModel`, the replay side with a `ReplayModel` in
`replay` mode over a store recorded from that model just before. Prints medians per block and the ratio,
for a block of one request and a block with one tool round (two requests).

Then, for a store of 10,000 entries of about 1 KB each (about 10 MB): the time to record each exchange
(an append under a lock, not a rewrite), to load the file, to find a stored request, and to build the
`ReplayMissError` of a request the store lacks (the nearest entry and its diff).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.errors import ReplayMissError
from nighthawk.replay import ReplayModel, ReplayStore, replay_executor, request_digest

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
        finish = ToolCallPart("nh_outcome", {"kind": "pass"})
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

    large_store()


LARGE = 10_000
FILLER = "The quarterly figures for region {region} list {count} orders; summarise what changed. " * 10


def question(index: int) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(f"{index}: " + FILLER.format(region=index % 7, count=index))])]


def large_store() -> None:
    parameters = ModelRequestParameters()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "large.replay.yaml"
        store = ReplayStore(path)
        costs = []
        for index in range(LARGE):
            start = time.perf_counter()
            store.record_exchange(question(index), ModelResponse(parts=[TextPart("ok")]), model_request_parameters=parameters)
            costs.append(time.perf_counter() - start)
        size_mb = path.stat().st_size / 1e6
        print(f"\nA store of {LARGE} entries ({size_mb:.1f} MB), recorded one exchange at a time:")
        print(f"  record one exchange: median {statistics.median(costs) * 1000:.2f} ms, last 100 "
              f"{statistics.median(costs[-100:]) * 1000:.2f} ms, total {sum(costs):.1f} s")
        start = time.perf_counter()
        loaded = ReplayStore(path)
        assert len(loaded) == LARGE
        print(f"  load the file: {time.perf_counter() - start:.2f} s")
        start = time.perf_counter()
        store.compact()
        print(f"  compact the file: {time.perf_counter() - start:.2f} s")
        start = time.perf_counter()
        digest = request_digest(question(1234), None, parameters)
        assert loaded.find(digest) is not None
        print(f"  digest and find a stored request: {(time.perf_counter() - start) * 1000:.2f} ms")
        model = ReplayModel(None, loaded, "replay")
        start = time.perf_counter()
        try:
            asyncio.run(model.request(question(LARGE + 1), None, parameters))
        except ReplayMissError:
            pass
        print(f"  miss (nearest entry and diff among {LARGE}): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
