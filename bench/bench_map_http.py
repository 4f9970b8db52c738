"""`nighthawk.map` through the HTTP path, and how much of each item's request a prompt cache can reuse.

Run: `python bench/bench_map_http.py [--quick] [--prefix-only | --throughput-only] [--against COMMIT [--rounds N]]`
(with nighthawk installed or PYTHONPATH=core). Prints figures; asserts nothing. With `--against`, (c) runs
`--rounds` times (2) for a `git archive` of COMMIT and for this tree in turn, the same benchmark code
driving each tree's nighthawk. The provider is the test suite's OpenAI-compatible server (`tests/support/openai_server.py`)
in a child process on loopback, so its CPU is not the map's: every request is answered after a fixed
latency with one `nh_outcome` call, over the real `openai` client and pydantic-ai's Chat Completions model.

(c) 1,000 items at 200 ms latency, concurrency 32, sync and async functions: floor / elapsed, the floor
    being the largest of the latency bound (as in `bench_map.py` (b)), the client's and the server's CPU
    (each measured in its own process over a plain loop of the same calls at zero latency), and both
    together spread over the machine's cores; the latency floor alone / elapsed (the issue's figure); the
    TCP connections the server saw (reused: about `concurrency`, not one per item); and, for reference,
    the bare `openai` SDK sending the body the map's items sent, 32 at a time, to the same server;
(e) a notebook-style `classify(ticket)` over distinct tickets (and a variant reading the categories from a global): the longest prefix that every item's first
    request shares, as a share of each request, serialized in the order a provider builds its prompt
    (tool schemas, then the messages in order; OpenAI and Anthropic both put tools first), and in the
    body's own key order. Where the shared prefix ends, what comes next is shown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import nighthawk as nh
from bench_map import (  # bench/ is this script's path
    label,
    label_async,
    load,
    texts,
    timed_with_cpu,
)

QUICK = "--quick" in sys.argv
TESTS = Path(__file__).resolve().parent.parent / "tests"


# --- the provider, in a child process ----------------------------------------------------------------------


def serve(latency_s: float, expression: str) -> None:
    """Child process: answer every request after `latency_s`; print the base URL, then on stdin's end the
    request and connection counts and every request body (as JSON on one line)."""
    sys.path.insert(0, str(TESTS))
    from http.server import ThreadingHTTPServer

    from support.openai_server import Reply, ScriptedOpenAIServer, tool_call

    # 32 clients connecting at once overflow the default listen backlog of 5 on a loaded machine: dropped
    # connects then fail items. A provider's front end accepts them; so does this one (in this child only).
    ThreadingHTTPServer.request_queue_size = 128

    def script(request: Any) -> Reply:
        time.sleep(latency_s)  # the handler's own thread: requests wait side by side, as at a provider
        return Reply(calls=[tool_call("nh_outcome", kind="return", return_expression=expression)])

    with ScriptedOpenAIServer(script, lifetime=900.0, max_requests=10**6, idle_timeout=120.0) as server:
        serving_cpu = time.process_time()
        print(server.base_url, flush=True)
        sys.stdin.read()
        report = {
            "requests": server.request_count,
            "connections": server.connection_count,
            "cpu_s": time.process_time() - serving_cpu,
            "bodies": [request.body for request in server.requests],
        }
    print(json.dumps(report), flush=True)


@dataclass
class Seen:
    """What the provider saw, filled in when it stops."""

    requests: int = 0
    connections: int = 0
    cpu_s: float = 0.0
    """The server's CPU time while serving (its own process, on the other core as often as not)."""
    bodies: list[Any] = field(default_factory=list)


@contextmanager
def provider(latency_s: float, expression: str) -> Iterator[Seen]:
    """A fresh provider (its own connection count) and an executor's environment pointing at it."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(latency_s), expression],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    seen = Seen()
    try:
        os.environ["OPENAI_BASE_URL"] = child.stdout.readline().strip()
        os.environ["OPENAI_API_KEY"] = "bench-key"
        yield seen
    finally:
        child.stdin.close()
        report = json.loads(child.stdout.readline() or "{}")
        child.wait(timeout=30)
        seen.requests = report.get("requests", 0)
        seen.connections = report.get("connections", 0)
        seen.cpu_s = report.get("cpu_s", 0.0)
        seen.bodies = report.get("bodies", [])


def executor() -> nh.AgentStepExecutor:
    """Made inside `provider`: the OpenAI client reads the base URL when it is made."""
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-bench", max_retries=0)
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


# --- (c) --------------------------------------------------------------------------------------------------


def http_throughput() -> None:
    count, latency_s, concurrency = (300 if QUICK else 1000), 0.2, 32
    loop_count = 50 if QUICK else 150
    with provider(0.0, "text.upper()") as idle, nh.run(executor()):
        label("warm up")
        loop_s, loop_cpu_s = timed_with_cpu(lambda: [label(text) for text in texts(loop_count, "loop")])
    # The floor counts the CPU each side needs, not the loop's wall time per item (which adds the server's
    # time and the trips between them): the client is one process on one core (the GIL), the server
    # another; together they share the machine's cores.
    client_cpu_s = loop_cpu_s / loop_count
    server_cpu_s = idle.cpu_s / max(idle.requests, 1)
    cores = os.cpu_count() or 1
    floors = {
        "latency": count * latency_s / concurrency,
        "client CPU": count * client_cpu_s,
        "server CPU": count * server_cpu_s,
        f"both on {cores} cores": count * (client_cpu_s + server_cpu_s) / cores,
    }
    bound, floor = max(floors.items(), key=lambda named: named[1])
    print(f"(c) HTTP: {count} items, {latency_s * 1000:.0f} ms latency, concurrency {concurrency}")
    print(
        f"    per item (sync loop over HTTP, zero latency): wall {loop_s / loop_count * 1000:.2f} ms, client CPU "
        f"{client_cpu_s * 1000:.2f} ms, server CPU {server_cpu_s * 1000:.2f} ms ({load()})"
    )
    print("    floors: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in floors.items()) + f"; floor {floor:.2f} s ({bound})")
    latency_floor = floors["latency"]
    for name, function in (("sync", label), ("async", label_async)):
        with provider(latency_s, "text.upper()") as seen, nh.run(executor()), full_collections() as passes:
            nh.map(function, texts(4, "warm"), progress=False)
            passes.clear()
            elapsed, cpu = timed_with_cpu(
                lambda function=function, name=name: nh.map(function, texts(count, name), concurrency=concurrency, progress=False)
            )
            passes_s = list(passes)
        print(
            f"    {name:5}: {elapsed:6.2f} s, floor / elapsed {floor / elapsed:.2f}, latency floor / elapsed "
            f"{latency_floor / elapsed:.2f}, client CPU {cpu:.2f} s, server CPU {seen.cpu_s:.2f} s; {seen.requests} "
            f"requests over {seen.connections} connections; {len(passes_s)} full GC passes, longest "
            f"{max(passes_s, default=0) * 1000:.0f} ms ({load()})"
        )
    body = seen.bodies[-1]  # what the last item sent
    with provider(latency_s, "text.upper()"):
        elapsed, cpu = bare_sdk_map(count, concurrency, body=body)
    print(
        f"    bare openai SDK, {concurrency} at a time: {elapsed:6.2f} s, latency floor / elapsed "
        f"{latency_floor / elapsed:.2f}, client CPU {cpu:.2f} s ({load()})"
    )


@contextmanager
def full_collections() -> Iterator[list[float]]:
    """The durations of the garbage collector's full passes (generation 2) while the block runs."""
    import gc

    durations: list[float] = []
    started = [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.perf_counter()
            else:
                durations.append(time.perf_counter() - started[0])

    gc.callbacks.append(timed)
    try:
        yield durations
    finally:
        gc.callbacks.remove(timed)


def bare_sdk_map(count: int, concurrency: int, *, body: dict[str, Any]) -> tuple[float, float]:
    """`count` requests of `body` through one `AsyncOpenAI` client, `concurrency` at a time: elapsed and CPU."""
    import asyncio

    from openai import AsyncOpenAI

    client = AsyncOpenAI(max_retries=0)

    async def one(places: asyncio.Semaphore) -> None:
        async with places:
            await client.chat.completions.create(**body)

    async def run(n: int) -> None:
        places = asyncio.Semaphore(concurrency)
        await asyncio.gather(*(one(places) for _ in range(n)))

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(run(concurrency))  # connections opened, code warm
        cpu, started = time.process_time(), time.perf_counter()
        loop.run_until_complete(run(count))
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        loop.run_until_complete(client.close())
        loop.close()


# --- (e) --------------------------------------------------------------------------------------------------


@nh.natural_function
def classify(ticket: str) -> Literal["billing", "bug", "account", "other"]:
    """natural
    Read the support ticket <ticket> and classify it: billing, bug, account or other.
    """


CATEGORIES = ["billing", "bug", "account", "other"]


@nh.natural_function
def classify_into(ticket: str) -> str:
    """natural
    Read the support ticket <ticket> and classify it into one of <CATEGORIES>.
    """


TICKETS = [
    "I was charged twice for my March invoice, please refund one of the payments.",
    "The export button crashes the app when the table has more than 1,000 rows.",
    "How do I change the email address on my account? The settings page won't save it.",
    "Do you offer a discount for non-profit organisations?",
    "After the last update the dashboard shows no data for yesterday.",
    "My card was declined but the bank says everything is fine on their side.",
]


def provider_order(body: dict[str, Any]) -> str:
    """The request as a provider lays out its prompt: tool schemas, then the messages in order."""
    tools = json.dumps(body.get("tools") or [], ensure_ascii=False)
    return tools + "".join(json.dumps(message, ensure_ascii=False) for message in body.get("messages") or [])


def common_prefix(texts: list[str]) -> int:
    first, last = min(texts), max(texts)  # the lexicographic extremes bound every shared prefix
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return length


def shared_prefix(function: Any) -> None:
    with provider(0.0, '"billing"') as seen, nh.run(executor()):
        nh.map(function, TICKETS, concurrency=4, progress=False)
    print(f"(e) shared prefix of the first request of {len(TICKETS)} `{function.__name__}(ticket)` items")
    for name, serialize in (("tools, then messages", provider_order), ("body key order", json.dumps)):
        texts_ = [serialize(body) for body in seen.bodies]
        shared = common_prefix(texts_)
        shares = sorted(shared / len(text) for text in texts_)
        print(
            f"    {name}: {shared} of {min(map(len, texts_))}-{max(map(len, texts_))} characters shared: "
            f"{shares[0]:.0%} (least) to {shares[-1]:.0%} (most) of a request"
        )
        if name.startswith("tools"):
            where(texts_, shared)


def where(texts_: list[str], shared: int) -> None:
    """What the shared prefix ends on, and what follows it in two items."""
    print(f"      shared part ends: ...{texts_[0][max(0, shared - 160):shared]!r}")
    for text in texts_[:2]:
        print(f"      then: {text[shared:shared + 120]!r}... ({len(text) - shared} characters after)")


def against(commit: str, rounds: int) -> None:
    """(c) for a `git archive` of `commit` and for this tree, in turn, `rounds` times."""
    import tempfile

    from bench_startup import REPO, extract

    with tempfile.TemporaryDirectory(prefix="nh-map-http-") as folder:
        trees = {commit: extract(commit, Path(folder) / "base"), "this tree": REPO}
        for _ in range(rounds):
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "core"), str(tree)])}
                out = subprocess.run(
                    [sys.executable, __file__, "--throughput-only"], capture_output=True, text=True, env=env, check=True
                ).stdout
                for line in out.splitlines():
                    if line.lstrip().startswith(("sync", "async", "bare", "per item")):
                        print(f"{name:>10} | {line.strip()}", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(float(sys.argv[2]), sys.argv[3])
        return
    if "--against" in sys.argv:
        at = sys.argv.index("--against")
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
        against(sys.argv[at + 1], rounds)
        return
    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")  # no tokenizer vocabulary download for gpt-bench
    if "--throughput-only" not in sys.argv:
        shared_prefix(classify)  # the categories in the return annotation
        shared_prefix(classify_into)  # the categories a notebook global the program reads
    if "--prefix-only" not in sys.argv:
        http_throughput()


if __name__ == "__main__":
    main()
