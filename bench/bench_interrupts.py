"""How long a real kernel takes to stop a `%%natural` cell after an interrupt.

Run: `python bench/bench_interrupts.py` (from a checkout; the kernel imports its packages). Starts one
kernel with the setup of `tests/kernel/test_interrupts.py` (a slow expression, a blocking sync tool and a
sleeping sync scripted model), runs each cell three times, interrupts it 1.5 s after sending it and prints
the seconds from the interrupt to the cell's reply (message round trips included). Asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "kernel"), str(REPO / "tests"), str(REPO)]

from live import live_kernel  # noqa: E402  (the kernel tests' own client, found through the path above)
from test_interrupts import SETUP  # noqa: E402

INTERRUPT_AFTER_S = 1.5
CELLS = {
    "slow nh_eval expression": "%%natural\nASSIGN total = slow_count(45) or data['rows'].append(4)",
    "blocking sync tool": "%%natural\nCALL block\nThen set <:total>.",
    "sleeping sync scripted model": "%%natural --model sleeper\nSet <:total> to 1.",
}


def main() -> None:
    with live_kernel(SETUP) as live:
        live.ok("%%natural\nASSIGN double_total = 2")  # the runtime's threads exist before the first timing
        for label, cell in CELLS.items():
            delays = []
            for _ in range(3):
                started = time.perf_counter()
                outcome = live.run(cell, interrupt_after=INTERRUPT_AFTER_S, timeout=30)
                delays.append(time.perf_counter() - started - INTERRUPT_AFTER_S)
                if outcome.ename != "KeyboardInterrupt":
                    raise SystemExit(f"{label}: the cell ended with {outcome.ename!r}, not an interrupt")
            runs = ", ".join(f"{delay:.3f}" for delay in delays)
            print(f"{label:<30} interrupt -> reply: median {statistics.median(delays):.3f} s ({runs})")


if __name__ == "__main__":
    main()
