"""A map's first seconds and a batch map's rounds: when the first request goes out, and how many batches go.

Run: `python bench/bench_map_first_seconds.py [--base PATH] [--items N]` from a checkout. Each case runs in a
fresh process (the first map of a process, as in a new notebook), against the test suite's local servers:

(a) a direct map of `--items` items (1,000) at `concurrency` equal to them, the server refusing the key (401)
    so the map stops at its first answer: seconds from the call to the first request at the server, and how
    many items had been prepared by then (each item's prompt reads its argument once);
(b) a batch map of 2,000 items, two rounds each (a tool call, then the outcome), batches ending 1 s after they
    are made, polled every second: the batches made and their sizes, and the seconds the map took.

`--base PATH` runs the same cases with that tree's `core/` first (e.g. a `git archive` of main). Asserts nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def first_request(items: int) -> str:
    from pydantic_ai.models import override_allow_model_requests

    from support.batch_server import BatchServer
    from support.openai_server import Status

    events: list[tuple[str, float]] = []

    class Text(str):
        def __str__(self) -> str:
            events.append(("prepared " + str.__str__(self), time.perf_counter()))
            return str.__str__(self)

    def refuse(request: object) -> Status:
        events.append(("request", time.perf_counter()))
        return Status(401, "invalid key", should_retry=False)

    import nighthawk as nh
    from support.shouting_map import shout

    with BatchServer(refuse, lifetime=300.0) as server, override_allow_model_requests(True):
        os.environ["OPENAI_BASE_URL"] = server.base_url
        executor = nh.AgentStepExecutor.from_configuration(
            configuration=nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=0)
        )
        with nh.run(executor):
            started = time.perf_counter()
            try:
                nh.map(shout, [Text(f"word {n}") for n in range(items)], concurrency=items, progress=False)
            except nh.NighthawkError:
                pass
    kinds = [kind for kind, _ in events]
    first = kinds.index("request")
    prepared = {kind for kind in kinds[:first] if kind.startswith("prepared")}
    return f"(a) {items} items at once: first request {events[first][1] - started:.2f} s after the call, {len(prepared)} items prepared by then"


def batch_rounds() -> str:
    from pydantic_ai.models import override_allow_model_requests

    from support.batch_maps import two_rounds
    from support.batch_server import BatchServer

    import tempfile

    import nighthawk as nh
    from support.shouting_map import shout

    os.environ["NIGHTHAWK_BATCH_POLL_S"] = "1"
    with BatchServer(two_rounds, delay=1.0, lifetime=900.0) as server, override_allow_model_requests(True), tempfile.TemporaryDirectory() as folder:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        executor = nh.AgentStepExecutor.from_configuration(
            configuration=nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=0)
        )
        with nh.run(executor):
            started = time.perf_counter()
            nh.map(shout, [f"word {n}" for n in range(2000)], batch_api=True, store=f"{folder}/map.sqlite", progress=False)
            took = time.perf_counter() - started
    sizes = [len(batch.lines) for batch in server.batches.values()]
    return f"(b) 2,000 items, two rounds: {len(sizes)} batches {sizes}, {took:.1f} s"


def run(core: Path, case: str, items: int) -> str:
    env = {
        **os.environ, "PYTHONPATH": os.pathsep.join([str(core), str(core.parent), str(ROOT / "tests")]),
        "OPENAI_API_KEY": "bench-key", "NIGHTHAWK_TOKENIZER": "estimate",
    }
    done = subprocess.run([sys.executable, __file__, "--case", case, str(items)], env=env, capture_output=True, text=True, timeout=1200)
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else f"failed: {done.stderr.strip().splitlines()[-1:]}"


def main() -> None:
    if "--case" in sys.argv:
        case, items = sys.argv[sys.argv.index("--case") + 1], int(sys.argv[sys.argv.index("--case") + 2])
        print(first_request(items) if case == "first" else batch_rounds())
        return
    items = int(sys.argv[sys.argv.index("--items") + 1]) if "--items" in sys.argv else 1000
    trees = [("this tree", ROOT / "core")]
    if "--base" in sys.argv:
        trees.insert(0, ("base", Path(sys.argv[sys.argv.index("--base") + 1]).resolve() / "core"))
    for name, core in trees:
        for case in ("first", "rounds"):
            print(f"{name}: {run(core, case, items)}", flush=True)


if __name__ == "__main__":
    main()
