"""`nighthawk.map` against a plain loop, and against the floor set by latency and CPU; its memory.

Run: `python bench/bench_map.py [--quick]` (with nighthawk installed or PYTHONPATH=core). Prints figures;
asserts nothing. A scripted async model answers one request per item after a fixed latency.

(a) zero latency: map throughput / plain-loop throughput (the concurrency machinery's own cost);
(b) 1,000 items at 200 ms, concurrency 32, sync and async functions: floor / elapsed, where the floor is
    max(N x latency / concurrency, N x CPU per item) and CPU per item comes from the loop in (a);
(d) peak traced memory (tracemalloc) mapping a generator: 10^5 items through a plain async callable (the
    driver, keys and session store alone), and fewer items through a natural function (about 3 ms of CPU
    each, and tracemalloc slows that several times).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import tracemalloc

import nighthawk as nh
from nighthawk.batch.store import session_store
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

QUICK = "--quick" in sys.argv


def executor(latency_s: float) -> nh.AgentStepExecutor:
    async def model(messages: list, info: AgentInfo) -> ModelResponse:
        if latency_s:
            await asyncio.sleep(latency_s)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "text.upper()"})])

    configuration = nh.StepExecutorConfiguration(model=FunctionModel(model, model_name=f"latency-{latency_s}"))
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


@nh.natural_function
def label(text: str) -> str:
    """natural
    Label <text>.
    """


@nh.natural_function
async def label_async(text: str) -> str:
    """natural
    Label <text>.
    """


def texts(count: int, tag: str) -> list[str]:
    return [f"{tag} review number {n}" for n in range(count)]


def load() -> str:
    """The machine's load: figures taken on a shared machine are read against it."""
    return f"load average {os.getloadavg()[0]:.2f}"


def timed(action) -> float:
    return timed_with_cpu(action)[0]


def timed_with_cpu(action) -> tuple[float, float]:
    """Elapsed and process CPU seconds: elapsed well above both the latency bound and the CPU used is
    time spent waiting (thread hand-offs, a machine busy with other work), not work."""
    session_store().clear()  # every measurement runs its items, none is answered from memory
    cpu, started = time.process_time(), time.perf_counter()
    action()
    return time.perf_counter() - started, time.process_time() - cpu


def warm_up() -> None:
    """First calls parse and compile (a sync function's map twin too): not what is measured."""
    label("warm up")
    nh.map(label, texts(4, "warm"), progress=False)
    nh.map(label_async, texts(4, "warm"), progress=False)


def zero_latency() -> float:
    count = 100 if QUICK else 300
    with nh.run(executor(0.0)):
        warm_up()
        loop_s = timed(lambda: [label(text) for text in texts(count, "loop")])
        map_s = timed(lambda: nh.map(label, texts(count, "map"), concurrency=8, progress=False))

        async def sequential() -> None:
            for text in texts(count, "aloop"):
                await label_async(text)

        async_loop_s = timed(lambda: asyncio.run(sequential()))
        async_map_s = timed(lambda: nh.map(label_async, texts(count, "amap"), concurrency=8, progress=False))
    print(f"(a) zero latency, {count} items, concurrency 8")
    print(f"    sync:  loop {count / loop_s:7.1f} items/s, map {count / map_s:7.1f} items/s, ratio {loop_s / map_s:.2f} ({load()})")
    print(
        f"    async: loop {count / async_loop_s:7.1f} items/s, map {count / async_map_s:7.1f} items/s, "
        f"ratio {async_loop_s / async_map_s:.2f} ({load()})"
    )
    return loop_s / count


def latency_bound(cpu_per_item_s: float) -> None:
    count, latency_s, concurrency = (300 if QUICK else 1000), 0.2, 32
    floor = max(count * latency_s / concurrency, count * cpu_per_item_s)
    print(f"(b) {count} items, {latency_s * 1000:.0f} ms latency, concurrency {concurrency}: floor {floor:.2f} s")
    with nh.run(executor(latency_s)):
        warm_up()
        for name, function in (("sync", label), ("async", label_async)):
            elapsed, cpu = timed_with_cpu(
                lambda function=function, name=name: nh.map(function, texts(count, name), concurrency=concurrency, progress=False)
            )
            print(f"    {name:5}: {elapsed:6.2f} s, floor / elapsed {floor / elapsed:.2f}, process CPU {cpu:.2f} s ({load()})")


async def echo(text: str) -> str:
    return text


def peak_memory() -> None:
    plain_count = 10_000 if QUICK else 100_000
    natural_count = 500 if QUICK else 2_000

    def generated(count: int):
        return (f"generated item {n}" for n in range(count))

    print("(d) peak traced memory mapping a generator")
    with nh.run(executor(0.0)):
        warm_up()
        for name, function, count in (("plain async callable", echo, plain_count), ("natural function", label, natural_count)):
            session_store().clear()
            tracemalloc.start()
            started = time.perf_counter()
            result = nh.map(function, generated(count), concurrency=32, progress=False)
            elapsed = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert len(result) == count
            print(f"    {name}: {count:,} items, peak {peak / 2**20:.1f} MiB ({peak / count:.0f} B/item), {elapsed:.1f} s traced ({load()})")
            del result
    session_store().clear()


def main() -> None:
    cpu_per_item_s = zero_latency()
    print(f"    CPU per item (sync loop): {cpu_per_item_s * 1000:.2f} ms")
    latency_bound(cpu_per_item_s)
    peak_memory()


if __name__ == "__main__":
    main()
