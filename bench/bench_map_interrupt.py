"""How fast a 2,000-item `nighthawk.map` stops on Ctrl-C, in each phase, and how soon its progress line shows.

Run: `python bench/bench_map_interrupt.py [--base PATH] [--items N] [--repeat N] [--cases waiting:0,direct:8]`
from a checkout. Each case runs the map in a child process (this checkout's `core/` on its path, or
`PATH/core` for `--base`, so two versions are measured in one run) against the test suite's local Batch API
server (`tests/support/batch_server.py`, in a child process of its own, on loopback), sends SIGINT at a
moment of the map and prints the seconds from the signal to the moment the child caught the
`KeyboardInterrupt`, with the length of the traceback Python would print and the message. Asserts nothing.

The phases:
- `waiting`: a batch map whose batches run for minutes, interrupted 1 s after the provider said `in_progress`
  of the batch of many lines (every item waits on its batch line);
- `processing`: the batch of many lines ends after 3 s; interrupted 1 s after its results were downloaded (the
  items' answers are being handed back and run on).
  A batch of one line (a big map's first request, sent alone, from `ALONE_FIRST_ABOVE`) runs for minutes in both.
- `direct`: a direct map (concurrency 8 and 1,000) whose requests hang, interrupted 5 s after it was called;
- `answering`: a direct map whose requests are answered after 1 s each, interrupted 5 s after it was called
  (answers land, items run on: the main thread is busy, as when an interrupt was once lost).

It also prints when the progress line first appeared on stderr (seconds after the map was called).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
DIRECT_AFTER_S = 5.0
"""A direct map is interrupted this long after it was called (its requests hang: nothing else happens)."""
ANSWER_AFTER_S = 1.0
"""In the `answering` phase, each direct request is answered after this long."""
ITEMS = int(sys.argv[sys.argv.index("--items") + 1]) if "--items" in sys.argv else 2000
REPEAT = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 1

CHILD = textwrap.dedent(
    '''
    import json, os, sys, time, traceback
    import nighthawk as nh

    @nh.natural_function
    def shout(text: str) -> str:
        """natural
        Shout <text>.
        """

    phase, store, count, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=0)
    texts = [f"ticket {n}" for n in range(count)]
    with nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)):
        print(json.dumps({"started": time.time()}), flush=True)
        try:
            nh.map(shout, texts, batch_api=phase not in ("direct", "answering"), store=store, progress=True, concurrency=concurrency or None)
        except KeyboardInterrupt as exc:
            caught = time.time()
            chain = "".join(traceback.format_exception(exc))
            print(json.dumps({"caught": caught, "message": str(exc), "traceback_chars": len(chain)}), flush=True)
    '''
)


def serve() -> None:
    """Child process: the batch server; prints its base URL, stops when stdin closes."""
    sys.path.insert(0, str(TESTS))
    from support.batch_server import BatchServer
    from support.openai_server import Hang, Reply, tool_call

    def script(request: Any) -> Any:
        if request.path.endswith("/chat/completions") and "direct" in sys.argv:
            return Hang(120.0)
        if request.path.endswith("/chat/completions") and "answering" in sys.argv:
            time.sleep(ANSWER_AFTER_S)
        if not request.tool_results:
            return Reply(calls=[tool_call("nh_eval", expression="text.upper()")])
        return Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper() + '!'")])

    many_lines_s = 3.0 if "processing" in sys.argv else 600.0

    class Server(BatchServer):
        def _make(self, prefix: str, endpoint: str, lines: list[dict[str, Any]], **fields: Any) -> Any:
            self.delay = many_lines_s if len(lines) > 1 else 600.0
            return super()._make(prefix, endpoint, lines, **fields)

    with Server(script, lifetime=900.0) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


def run_case(core: Path, phase: str, concurrency: int, folder: Path) -> dict[str, Any]:
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", phase], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None and server.stdin is not None
    base_url = server.stdout.readline().strip()
    script = folder / "child.py"
    script.write_text(CHILD)
    env = {
        **os.environ,
        "PYTHONPATH": f"{core}{os.pathsep}{core.parent}",
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "bench-key",
        "NIGHTHAWK_TOKENIZER": "estimate",
        "NIGHTHAWK_BATCH_POLL_S": "0.25",
    }
    store = folder / "map.sqlite"
    child = subprocess.Popen(
        [sys.executable, str(script), phase, str(store), str(ITEMS), str(concurrency)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=folder,
    )
    assert child.stdout is not None and child.stderr is not None
    started = json.loads(child.stdout.readline())["started"]
    first_line: float | None = None
    trigger = {"waiting": rb"in_progress, \d+/\d\d+ done", "processing": rb"downloading results"}.get(phase)
    seen = b""
    fire_at: float | None = None if trigger else time.monotonic() + DIRECT_AFTER_S
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if fire_at is not None and time.monotonic() >= fire_at:
            break
        ready, _, _ = select.select([child.stderr], [], [], 0.05)
        if ready:
            chunk = os.read(child.stderr.fileno(), 65536)
            if not chunk:
                break
            if first_line is None and b"nighthawk.map" in chunk:
                first_line = time.time() - started
            seen += chunk
            if fire_at is None and re.search(trigger, seen):
                fire_at = time.monotonic() + 1.0
    signalled = time.time()
    child.send_signal(signal.SIGINT)
    line = child.stdout.readline()
    if not line:
        seen += child.stderr.read()
    child.kill()
    child.wait()
    server.stdin.close()
    server.wait(timeout=30)
    report = json.loads(line) if line else {}
    return {
        "interrupt_s": report["caught"] - signalled if "caught" in report else None,
        "first_line_s": first_line,
        "message": report.get("message", "(no KeyboardInterrupt caught): " + seen.decode(errors="replace")[-600:]),
        "traceback_chars": report.get("traceback_chars"),
    }


def each_case(run: Callable[[Path, str, int, Path], dict[str, Any]], say: Callable[[list[dict[str, Any]]], str]) -> None:
    """Run each chosen case (`--cases`) `REPEAT` times for each version (`--base`'s, then this checkout's),
    printing the case and `say(runs)` on one line. `run(core, phase, concurrency, folder)` measures one run."""
    import tempfile

    base = Path(sys.argv[sys.argv.index("--base") + 1]) if "--base" in sys.argv else None
    versions = [("base", base / "core")] if base is not None else []
    versions.append(("this", REPO / "core"))
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in (sys.argv[sys.argv.index("--cases") + 1].split(",") if "--cases" in sys.argv else ["waiting:0", "processing:0", "direct:8", "direct:1000"])]
    with tempfile.TemporaryDirectory() as folder:
        for phase, concurrency in cases:
            for label, core in versions:
                runs = []
                for attempt in range(REPEAT):
                    attempt_folder = Path(folder) / f"{label}-{phase}-{concurrency}-{attempt}"
                    attempt_folder.mkdir()
                    runs.append(run(core, phase, concurrency, attempt_folder))
                name = f"{phase}" + (f" (concurrency {concurrency})" if concurrency else "")
                print(f"{label:>4} {name:<28} {say(runs)}", flush=True)


def main() -> None:
    print(f"{ITEMS} items, {REPEAT} run(s) each; seconds from SIGINT to the KeyboardInterrupt caught in the child")
    each_case(
        run_case,
        lambda runs: (
            f"interrupt {figures([run['interrupt_s'] for run in runs])}; "
            f"first progress line {figures([run['first_line_s'] for run in runs])}; "
            f"traceback {runs[-1]['traceback_chars']} chars; message: {runs[-1]['message'][:200]!r}"
        ),
    )


def figures(values: list[float | None]) -> str:
    """`median s (each, ...)`; `never` for a run without the figure."""
    known = sorted(value for value in values if value is not None)
    median = f"{statistics.median(known):.2f} s" if known else "never"
    each = ", ".join("never" if value is None else f"{value:.2f}" for value in values)
    return f"{median} ({each})" if len(values) > 1 else median

if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        main()
