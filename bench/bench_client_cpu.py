"""Client CPU per request of a natural function over HTTP, against the bare `openai` SDK on the same server.

Run: `PYTHONPATH=core:. python bench/bench_client_cpu.py [--against COMMIT] [--rounds N]`. The provider is the
test suite's OpenAI-compatible server in a child process (`bench_map_http.provider`, zero latency), so its
CPU is not counted. Each round measures, in this process, the CPU of `count` sequential calls of a one-request
natural function, of `count` bare `AsyncOpenAI.chat.completions.create` calls that send the body the
natural function sent, and of `count` calls of the pydantic-ai model's own `request` with the messages, settings
and parameters of the natural function's request (what a step would cost without pydantic-ai's agent run); `--against` runs the same rounds with the nighthawk of another commit (a `git
archive` in a temporary folder) in a child process, alternating with this tree. Prints medians; asserts nothing.
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

    from nighthawk._provider_models import build_model

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


def in_tree(tree: Path, count: int) -> tuple[float, ...]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "core"), str(tree)])}
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(count)], capture_output=True, text=True, env=env, check=True
    ).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--measure", type=int, default=None)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure)))
        return
    with tempfile.TemporaryDirectory(prefix="nh-client-cpu-") as folder:
        trees = {"this tree": REPO}
        if args.against:
            sys.path.insert(0, str(BENCH))
            from bench_startup import extract

            trees = {args.against: extract(args.against, Path(folder) / "base"), **trees}
        figures: dict[str, list[tuple[float, ...]]] = {label: [] for label in trees}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                figures[label].append(in_tree(tree, args.count))
    print(f"load average {os.getloadavg()[0]:.2f}; client CPU per request, medians of {args.rounds} rounds of {args.count}")
    for label, rounds in figures.items():
        natural = statistics.median(figure[0] for figure in rounds)
        bare = statistics.median(figure[1] for figure in rounds)
        ratio = statistics.median(figure[0] / figure[1] for figure in rounds)
        line = f"  {label:<12} natural function {natural:5.2f} ms, bare openai SDK {bare:5.2f} ms, ratio {ratio:.2f}x"
        if all(len(figure) > 2 for figure in rounds):  # the benchmark of an older tree may not measure it
            line += f"; pydantic-ai model.request alone {statistics.median(figure[2] for figure in rounds):5.2f} ms"
        print(line)


if __name__ == "__main__":
    main()
