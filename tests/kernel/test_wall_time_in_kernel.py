"""In a live kernel, a cell's wall-time budget stops the step whatever the user's code is doing on the
kernel's main thread: a blocking sync tool, a busy expression, a slow `__repr__` in the namespace. The cell
fails with `BudgetExceededError`, the namespace is what it was, and the next cell runs undisturbed.

Each stopped cell would run for 45 s; the execution timeout (15 s) tells a stop from a run to the end
without asserting how fast it was.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402

SETUP = BASE_SETUP + '''
total = "before"
data = {"rows": [1, 2, 3]}

@nighthawk.tool
def block(ctx) -> str:
    """Wait for something that never comes (45 s)."""
    time.sleep(45)
    return "done"

class SlowRepr:
    def __repr__(self) -> str:
        time.sleep(45)
        return "SlowRepr()"

def digest() -> str:
    return hashlib.sha256(pickle.dumps((total, data))).hexdigest()
'''

HANG_LIMIT = 15.0


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_kernel(SETUP) as kernel:
        yield kernel


def stopped(live: Live, cell: str) -> str:
    """Run `cell` under a 1 s wall-time budget; check it failed on the budget and changed nothing."""
    live.ok("before_digest = digest()")
    outcome = live.run(cell, timeout=HANG_LIMIT)
    assert outcome.ename == "BudgetExceededError", outcome.error_text
    assert live.ok("digest() == before_digest").result == "True"
    return outcome.error_text


def test_wall_time_budget_stops_a_blocking_sync_tool_in_a_cell(live: Live) -> None:
    error = stopped(live, "%%natural --budget wall_time_s=1\nCALL block\nThen set <:total>.")
    assert "the cell budget `wall_time_s` of 1.0 s was reached" in error


def test_wall_time_budget_stops_a_busy_expression_in_a_cell(live: Live) -> None:
    stopped(live, "%%natural --budget wall_time_s=1\nASSIGN total = slow_count(45) or data['rows'].append(4)")


def test_wall_time_budget_cuts_a_slow_repr_in_the_namespace(live: Live) -> None:
    live.ok("slow = SlowRepr()")
    try:
        stopped(live, "%%natural --budget wall_time_s=1\nRead <slow>, then set <:total>.")
    finally:
        live.ok("del slow")


def test_cell_after_a_stopped_step_runs_undisturbed(live: Live) -> None:
    stopped(live, "%%natural --budget wall_time_s=1\nCALL block")
    assert live.ok("slow_count(0.5) > 0").result == "True"  # no interrupt left behind to land here
    assert live.ok("%%natural\nRETURN len(data['rows'])").result == "3"
