"""`nighthawk.map(..., batch_api=True)`: 2,000 items through the test suite's local Batch API server, once
with OpenAI's Batch API and once with Anthropic's Message Batches API.

Run: `python bench/bench_batch_api.py [--quick] [--provider openai|anthropic]` (with nighthawk installed or
PYTHONPATH=core). Prints figures; asserts nothing. The server (`tests/support/batch_server.py`) runs in a
child process on loopback and ends each batch 2 s after it was made; its model answers each item in two
rounds (an `nh_eval`, then the outcome), so the map makes one batch per round. Model names `gpt-4o-mini` and
`claude-haiku-4-5`, so genai-prices prices the tokens the server reports (10 in, 5 out per request): the
map's cost is at the batch price, shown beside the list price.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nighthawk as nh

QUICK = "--quick" in sys.argv
TESTS = Path(__file__).resolve().parent.parent / "tests"
DELAY_S = 2.0
MODELS = {"openai": "openai-chat:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}


def serve() -> None:
    """Child process: print the base URL, then on stdin's end what the server saw, as JSON."""
    sys.path.insert(0, str(TESTS))
    from support.batch_server import BatchServer
    from support.openai_server import Reply, tool_call

    def script(request: Any) -> Reply:
        if not request.tool_results:
            return Reply(calls=[tool_call("nh_eval", expression="text.upper()")])
        return Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper() + '!'")])

    with BatchServer(script, delay=DELAY_S, lifetime=900.0) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()
        report = {
            "batches": len(server.batches),
            "lines": server.batch_lines,
            "largest": max((len(batch.lines) for batch in server.batches.values()), default=0),
            "direct": server.direct_requests,
        }
    print(json.dumps(report), flush=True)


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


def main(provider: str) -> None:
    count = 300 if QUICK else 2000
    child = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    os.environ["OPENAI_BASE_URL"] = child.stdout.readline().strip()
    os.environ["ANTHROPIC_BASE_URL"] = os.environ["OPENAI_BASE_URL"].removesuffix("/v1")
    os.environ["OPENAI_API_KEY"] = os.environ["ANTHROPIC_API_KEY"] = "bench-key"
    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")
    os.environ["NIGHTHAWK_BATCH_POLL_S"] = "0.25"
    configuration = nh.StepExecutorConfiguration(model=MODELS[provider], max_retries=0)
    with tempfile.TemporaryDirectory() as folder, nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)):
        started, cpu = time.perf_counter(), time.process_time()
        result = nh.map(shout, [f"ticket {n}" for n in range(count)], batch_api=True, store=f"{folder}/map.sqlite", progress="--progress" in sys.argv)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    child.stdin.close()
    seen = json.loads(child.stdout.readline())
    child.wait(timeout=30)
    usage = result.usage
    cost = usage.cost_usd or 0.0
    print(f"batch_api map ({MODELS[provider]}): {count} items, two rounds each, batches end {DELAY_S:.0f} s after they are made")
    print(f"    results right: {sum(value == f'TICKET {n}!' for n, value in enumerate(result))}/{count}")
    print(
        f"    requests: {usage.requests} model requests, as {seen['lines']} batch lines in {seen['batches']} batches "
        f"(largest {seen['largest']} lines); {seen['direct']} direct requests"
    )
    print(
        f"    wall time: {elapsed:.2f} s (floor {seen['batches'] * DELAY_S:.0f} s of batch delay, rounds in sequence); "
        f"the map's own CPU {cpu:.2f} s ({cpu / usage.requests * 1000:.1f} ms per request)"
    )
    print(
        f"    cost: ${cost:.6f} at the batch price for {usage.input_tokens} input and {usage.output_tokens} output tokens "
        f"(list price ${cost * 2:.6f})"
    )


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        chosen = sys.argv[sys.argv.index("--provider") + 1] if "--provider" in sys.argv else None
        for name in MODELS:
            if chosen in (None, name):
                main(name)
