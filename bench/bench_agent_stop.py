"""How long it takes to stop a coding agent when a step ends early, with the test suite's fake agents.

Run with `PYTHONPATH=core:tests python bench/bench_agent_stop.py`. For each backend (the fake `claude` and
`codex` programs; the real `claude_agent_sdk` running the fake `claude`), a block's agent starts a helper
process and sleeps; a signal handler then raises `SystemExit` into the waiting block. Printed: the median time
from the signal to the block raising, and to the agent and its helper being gone. Also the cost of the
launcher that puts the SDK's `claude` in a process group of its own (`true` run directly and through it).
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from nighthawk.agents._process import session_launcher
from support.agent_harness import BACKENDS, FakeAgent, alive, fake_agent_environment
from support.contract_blocks import compute

RUNS = 5


def stop_once(agent: FakeAgent) -> tuple[float, float]:
    """Seconds from the signal to the block raising, and to the agent and its helper being gone."""
    pidfile = agent.folder / "agent.pid"
    pidfile.unlink(missing_ok=True)
    agent.script([{"hang": True}])
    sent: list[float] = []

    def signal_when_working() -> None:
        while agent.hanging() is None:
            time.sleep(0.005)
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGUSR1)

    threading.Thread(target=signal_when_working, daemon=True).start()
    try:
        with nh.run(agent.executor()):
            compute(1)
    except SystemExit:
        raised = time.perf_counter()
    hung = agent.hanging()
    assert hung is not None
    while alive(hung["pid"]) or alive(hung["helper"]):
        time.sleep(0.001)
    return raised - sent[0], time.perf_counter() - sent[0]


def launcher_ms() -> tuple[float, float]:
    """Median ms to run `true` directly, and through the session launcher."""
    async def run(argv: list[str]) -> float:
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(*argv)
        await process.wait()
        return (time.perf_counter() - started) * 1000

    folder = tempfile.mkdtemp(prefix="nighthawk-bench-launcher-")
    direct, launched = [], []
    for index in range(RUNS * 4):
        os.makedirs(f"{folder}/{index}", mode=0o700)
        script, _ = session_launcher(f"{folder}/{index}", "/bin/true")
        direct.append(asyncio.run(run(["/bin/true"])))
        launched.append(asyncio.run(run([script])))
    return statistics.median(direct), statistics.median(launched)


def main() -> None:
    signal.signal(signal.SIGUSR1, lambda signum, frame: sys.exit(3))
    print(f"SystemExit into a waiting block, median of {RUNS}   block raises   agent + helper gone")
    with override_allow_model_requests(True):
        for backend in BACKENDS:
            folder = Path(tempfile.mkdtemp(prefix="nighthawk-bench-stop-"))
            os.environ.update(fake_agent_environment(folder))
            settings = {"executable": str(folder / "bin" / "claude")} if backend == "claude-code-sdk" else {}
            agent = FakeAgent(backend, folder, settings)
            times = [stop_once(agent) for _ in range(RUNS)]
            raised = statistics.median(t[0] for t in times) * 1000
            gone = statistics.median(t[1] for t in times) * 1000
            print(f"{backend:<52}{raised:>9.0f} ms{gone:>16.0f} ms")
    direct, launched = launcher_ms()
    print(f"`true` run directly: {direct:.1f} ms; through the SDK's session launcher: {launched:.1f} ms")


if __name__ == "__main__":
    main()
