"""How fast a 2,000-item `nighthawk.map` stops on a kernel interrupt in a real ipykernel, in each phase.

Run: `python bench/bench_kernel_map_interrupt.py [--base PATH] [--repeat N] [--after S] [--cases answering:1000,direct:1000]`
from a checkout. The phases, the default cases and the local Batch API server are `bench_map_interrupt.py`'s;
here the map runs in a cell of an ipykernel started with jupyter_client (as a notebook frontend starts one,
with the map's notebook view), the kernel is interrupted as the frontend's stop button does
(`interrupt_kernel`), and the figure is the seconds from the interrupt to the cell's reply (the message round
trip included). `--base` measures that tree's `core/` too, in turn. The moment is read from the server's batch
list: 1 s after the batch of many lines is in progress (`waiting`), 1.25 s after it completed (`processing`),
or 5 s (`--after`) after the cell was sent (`direct`, `answering`). Each case line says how many interrupts were honoured
(the cell ended with `KeyboardInterrupt`) and the slowest. Asserts nothing.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench_map_interrupt import ITEMS, REPEAT, each_case, figures

DIRECT = ("direct", "answering")
"""The phases that run a direct map (no Batch API), interrupted `AFTER_S` after the cell was sent."""
AFTER_S = float(sys.argv[sys.argv.index("--after") + 1]) if "--after" in sys.argv else 5.0
"""`--after S`: when a direct map is interrupted (later than 5 s, answers are landing while it runs on)."""
SERVER = Path(__file__).resolve().parent / "bench_map_interrupt.py"

DEFINE = '''
import nighthawk as nh

@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """

executor = nh.AgentStepExecutor.from_configuration(
    configuration=nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=0))
texts = [f"ticket {n}" for n in range(%d)]
''' % ITEMS


def _many_lines(base_url: str, status: str) -> bool:
    """Whether the server lists a batch of more than one line with `status`."""
    with urllib.request.urlopen(f"{base_url}/batches?limit=100", timeout=5) as answer:
        listed = json.load(answer)["data"]
    return any(batch["request_counts"]["total"] > 1 and batch["status"] == status for batch in listed)


def run_case(core: Path, phase: str, concurrency: int, folder: Path) -> dict[str, Any]:
    from jupyter_client.manager import start_new_kernel

    server = subprocess.Popen([sys.executable, str(SERVER), "--serve", phase], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    base_url = server.stdout.readline().strip()
    env = {
        **os.environ, "PYTHONPATH": f"{core}{os.pathsep}{core.parent}", "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "bench-key", "NIGHTHAWK_TOKENIZER": "estimate", "NIGHTHAWK_BATCH_POLL_S": "0.25",
    }
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60, env=env, cwd=str(folder))
    try:
        kc.execute_interactive(DEFINE, timeout=60)
        batch = "False" if phase in DIRECT else "True"
        limit = f", concurrency={concurrency}" if concurrency else ""
        msg_id = kc.execute(f"with nh.run(executor):\n    nh.map(shout, texts, batch_api={batch}, store='map.sqlite'{limit})")
        sent = time.monotonic()
        fire_at: float | None = sent + AFTER_S if phase in DIRECT else None
        status = {"waiting": "in_progress", "processing": "completed"}.get(phase)
        while fire_at is None or time.monotonic() < fire_at:
            if fire_at is None and status is not None and _many_lines(base_url, status):
                fire_at = time.monotonic() + (1.0 if phase == "waiting" else 1.25)
            time.sleep(0.05)
            if time.monotonic() - sent > 240:
                return {"interrupt_s": None, "error": "the moment never came"}
        interrupted = time.monotonic()
        km.interrupt_kernel()
        while True:
            try:
                reply = kc.get_shell_msg(timeout=120)
            except queue.Empty:
                return {"interrupt_s": None, "error": "no reply within 120 s"}
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        took = time.monotonic() - interrupted
        content = reply["content"]
        return {
            "interrupt_s": took,
            "honoured": content.get("ename") == "KeyboardInterrupt",
            "error": f"{content.get('ename')}: {content.get('evalue', '')[:160]}",
        }
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        server.stdin.close()
        server.wait(timeout=30)


def main() -> None:
    print(f"{ITEMS} items in a real kernel, {REPEAT} run(s) each; seconds from interrupt_kernel to the cell's reply")
    each_case(run_case, say)


def say(runs: list[dict[str, Any]]) -> str:
    """How many interrupts ended the cell with `KeyboardInterrupt`, the slowest, every figure, the last error."""
    honoured = sum(1 for run in runs if run.get("honoured"))
    slowest = max((run["interrupt_s"] for run in runs if run["interrupt_s"] is not None), default=None)
    worst = "never" if slowest is None else f"{slowest:.2f} s"
    missed = "".join(f"; not honoured: {run['error']}" for run in runs if not run.get("honoured"))
    return f"{honoured} of {len(runs)} honoured, slowest {worst}; {figures([run['interrupt_s'] for run in runs])}; {runs[-1]['error']}{missed}"


if __name__ == "__main__":
    main()
