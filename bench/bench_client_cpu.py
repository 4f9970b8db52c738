"""Client CPU per request of a natural function over HTTP, against the bare `openai` SDK on the same server.

Run: `PYTHONPATH=core:. python bench/bench_client_cpu.py [--against COMMIT] [--rounds N]`. The provider is the
test suite's OpenAI-compatible server in a child process (`bench_map_http.provider`, zero latency), so its
CPU is not counted. Each round measures, in this process, the CPU of `count` sequential calls of a one-request
natural function and of `count` bare `AsyncOpenAI.chat.completions.create` calls that send the body the
natural function sent; `--against` runs the same rounds with the nighthawk of another commit (a `git
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


def measure(count: int) -> tuple[float, float]:
    """(natural function, bare SDK) CPU ms per request, each over `count` sequential requests."""
    sys.path.insert(0, str(BENCH))
    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")
    import openai
    from bench_map import label, texts
    from bench_map_http import executor, provider

    import nighthawk as nh

    with provider(0.0, "text.upper()") as seen, nh.run(executor()):
        for text in texts(10, "warm"):
            label(text)
        started = time.process_time()
        for text in texts(count, "cpu"):
            label(text)
        natural_ms = (time.process_time() - started) / count * 1000
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
    return natural_ms, bare_ms


def in_tree(tree: Path, count: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "core"), str(tree)])}
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(count)], capture_output=True, text=True, env=env, check=True
    ).stdout
    natural, bare = json.loads(out.strip().splitlines()[-1])
    return natural, bare


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
        figures: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                figures[label].append(in_tree(tree, args.count))
    print(f"load average {os.getloadavg()[0]:.2f}; client CPU per request, medians of {args.rounds} rounds of {args.count}")
    for label, rounds in figures.items():
        natural = statistics.median(n for n, _ in rounds)
        bare = statistics.median(b for _, b in rounds)
        ratio = statistics.median(n / b for n, b in rounds)
        print(f"  {label:<12} natural function {natural:5.2f} ms, bare openai SDK {bare:5.2f} ms, ratio {ratio:.2f}x")


if __name__ == "__main__":
    main()
