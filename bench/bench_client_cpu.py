"""Client CPU per request of natural functions over HTTP, against the bare `openai` SDK on the same server.

Run: `PYTHONPATH=core:. python bench/bench_client_cpu.py [--against COMMIT] [--rounds N] [--map [--count N]]`.
The provider is the test suite's OpenAI-compatible server in a child process (`bench_map_http.provider`), so its
CPU is not counted. `--against` runs the same rounds with the nighthawk of another commit (a `git archive` in a
temporary folder) in a child process, alternating with this tree. Prints medians; asserts nothing.

Without `--map`, each round measures, in one process, the CPU of `count` sequential calls of a one-request
natural function (zero latency), of `count` bare `AsyncOpenAI.chat.completions.create` calls that send the body
the natural function sent, and of `count` calls of the pydantic-ai model's own `request` with the messages,
settings and parameters of the natural function's request (what a step would cost without pydantic-ai's agent
run).

With `--map`, each round measures, in one process, the CPU of a `nighthawk.map` of `count` items (default 600)
at 200 ms latency and concurrency 32, sync and async natural functions, and of the bare SDK sending the body
the map's items sent, 32 at a time, to the same server: CPU per request and its ratio to the bare SDK's in
the same process and moment (the machine may be shared; the ratio is the figure to compare).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


def measure(count: int) -> tuple[float, float, float]:
    """(natural function, bare SDK, pydantic-ai model request) CPU ms per request, each over `count` sequential
    requests."""
    sys.path.insert(0, str(BENCH))
    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")
    import openai
    from bench_map import label, texts
    from bench_map_http import executor, provider

    import nighthawk as nh

    natural = executor()
    with provider(0.0, "text.upper()") as seen, nh.run(natural):
        for text in texts(10, "warm"):
            label(text)
        started = time.process_time()
        for text in texts(count, "cpu"):
            label(text)
        natural_ms = (time.process_time() - started) / count * 1000
        model_ms = model_request_ms(count)
    body = seen.bodies[-1]
    with provider(0.0, "text.upper()"):
        client = openai.AsyncOpenAI(max_retries=0)

        async def bare(n: int) -> None:
            for _ in range(n):
                await client.chat.completions.create(**body)

        loop = asyncio.new_event_loop()
        loop.run_until_complete(bare(10))
        started = time.process_time()
        loop.run_until_complete(bare(count))
        bare_ms = (time.process_time() - started) / count * 1000
        loop.run_until_complete(client.close())
        loop.close()
    return natural_ms, bare_ms, model_ms


def model_request_ms(count: int) -> float:
    """CPU ms per call of `model.request` (the provider's pydantic-ai model, no agent run around it) with the
    messages, settings and parameters a natural function's step sent it."""
    from bench_map import label

    from nighthawk.model._provider_models import build_model

    model = build_model("openai-chat:gpt-bench", 0)[0]  # its own client, on this function's loop

    sent: dict = {}
    original = type(model).request

    async def spy(self, messages, settings, parameters):
        sent.update(messages=list(messages), settings=settings, parameters=parameters)
        return await original(self, messages, settings, parameters)

    type(model).request = spy
    try:
        label("capture")
    finally:
        type(model).request = original

    async def requests(n: int) -> None:
        for _ in range(n):
            await model.request(sent["messages"], sent["settings"], sent["parameters"])

    loop = asyncio.new_event_loop()
    loop.run_until_complete(requests(10))
    started = time.process_time()
    loop.run_until_complete(requests(count))
    loop.close()
    return (time.process_time() - started) / count * 1000


def measure_map(count: int) -> tuple[float, float, float]:
    """(sync map, async map, bare SDK) client CPU ms per request: `count` requests at 200 ms, 32 at a time."""
    sys.path.insert(0, str(BENCH))
    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")
    from bench_map import label, label_async, texts
    from bench_map_http import bare_sdk_map, executor, provider

    import nighthawk as nh

    latency_s, concurrency = 0.2, 32
    per_request: list[float] = []
    for name, function in (("sync", label), ("async", label_async)):
        with provider(latency_s, "text.upper()") as seen, nh.run(executor()):
            nh.map(function, texts(concurrency, f"warm {name}"), concurrency=concurrency, progress=False)
            started = time.process_time()
            nh.map(function, texts(count, name), concurrency=concurrency, progress=False)
            per_request.append((time.process_time() - started) / count * 1000)
    with provider(latency_s, "text.upper()"):
        _, cpu = bare_sdk_map(count, concurrency, body=seen.bodies[-1])
    return per_request[0], per_request[1], cpu / count * 1000


def in_tree(tree: Path, count: int, mode: str) -> tuple[float, ...]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "core"), str(tree)])}
    out = subprocess.run(
        [sys.executable, __file__, mode, str(count)], capture_output=True, text=True, env=env, check=True
    ).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=None, help="requests per figure (200; 600 with --map)")
    parser.add_argument("--map", action="store_true", help="a map at 200 ms latency, concurrency 32")
    parser.add_argument("--measure", type=int, default=None)
    parser.add_argument("--measure-map", type=int, default=None)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure)))
        return
    if args.measure_map is not None:
        print(json.dumps(measure_map(args.measure_map)))
        return
    count = args.count or (600 if args.map else 200)
    mode = "--measure-map" if args.map else "--measure"
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="nh-client-cpu-") as folder:
        trees = {"this tree": REPO}
        if args.against:
            sys.path.insert(0, str(BENCH))
            from bench_startup import extract

            trees = {args.against: extract(args.against, Path(folder) / "base"), **trees}
        figures: dict[str, list[tuple[float, ...]]] = {label: [] for label in trees}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                figures[label].append(in_tree(tree, count, mode))
    what = "maps at 200 ms, concurrency 32" if args.map else "sequential calls at zero latency"
    print(
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after (1 min; {os.cpu_count()} CPUs); "
        f"client CPU per request, {what}, medians of {args.rounds} rounds of {count}"
    )
    for label, rounds in figures.items():
        if args.map:
            sync, asynchronous, bare = (statistics.median(figure[i] for figure in rounds) for i in range(3))
            ratios = [statistics.median(figure[i] / figure[2] for figure in rounds) for i in range(2)]
            print(
                f"  {label:<12} sync map {sync:5.2f} ms ({ratios[0]:.2f}x), async map {asynchronous:5.2f} ms "
                f"({ratios[1]:.2f}x), bare openai SDK {bare:5.2f} ms"
            )
            continue
        natural = statistics.median(figure[0] for figure in rounds)
        bare = statistics.median(figure[1] for figure in rounds)
        ratio = statistics.median(figure[0] / figure[1] for figure in rounds)
        line = f"  {label:<12} natural function {natural:5.2f} ms, bare openai SDK {bare:5.2f} ms, ratio {ratio:.2f}x"
        if all(len(figure) > 2 for figure in rounds):  # the benchmark of an older tree may not measure it
            line += f"; pydantic-ai model.request alone {statistics.median(figure[2] for figure in rounds):5.2f} ms"
        print(line)


if __name__ == "__main__":
    main()
