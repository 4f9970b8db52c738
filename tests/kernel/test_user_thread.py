"""In a live kernel, the user's Python runs on the thread that called the block, and nothing it does wedges
the runtime: thread-bound objects work, natural functions fan out to worker threads and recurse, and an
expression that exits ends only its own step.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402

SETUP = BASE_SETUP + '''
import sqlite3, json
from concurrent.futures import ThreadPoolExecutor
conn = sqlite3.connect(":memory:")
conn.execute("create table answers (value integer)")
conn.execute("insert into answers values (41)")

@nighthawk.natural_function
def double(x: int) -> int:
    """natural
    RETURN x * 2
    """

@nighthawk.natural_function
def deepest_thread_count(n: int) -> int:
    """natural
    RETURN threading.active_count() if n == 0 else deepest_thread_count(n - 1)
    """

@nighthawk.tool
def fan_out(ctx, count: int) -> list:
    """Double 0..count-1 with natural functions on four worker threads."""
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(double, range(count)))

@nighthawk.tool
def read_answer(ctx) -> int:
    """Read the stored answer through the notebook's sqlite connection."""
    return conn.execute("select value from answers").fetchone()[0]

double(1)  # the runtime's own threads exist from here on
'''


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_kernel(SETUP) as kernel:
        yield kernel


def test_sqlite_connection_made_in_a_cell_works_in_nh_eval(live: Live) -> None:
    cell = live.ok("%%natural\nEVAL conn.execute('select value from answers').fetchone()[0]")
    assert cell.result == repr('{"value": 41, "error": null}')


def test_sqlite_connection_made_in_a_cell_works_in_the_return_expression(live: Live) -> None:
    cell = live.ok("%%natural\nRETURN conn.execute('select value + 1 from answers').fetchone()[0]")
    assert cell.result == "42"


def test_sync_user_tool_can_use_the_sqlite_connection(live: Live) -> None:
    cell = live.ok("%%natural\nCALL read_answer")
    assert cell.result == repr('{"value": 41, "error": null}')


def test_tool_fanning_natural_functions_out_to_a_thread_pool_finishes(live: Live) -> None:
    cell = live.ok("%%natural\nFAN fan_out 6", timeout=30)
    assert cell.result == "[0, 2, 4, 6, 8, 10]"


def test_recursion_forty_deep_adds_no_threads(live: Live) -> None:
    live.ok("baseline = threading.active_count()")
    assert live.ok("deepest_thread_count(40) - baseline", timeout=60).result == "0"
    assert live.ok("threading.active_count() - baseline").result == "0"


def test_system_exit_in_an_expression_fails_only_its_cell(live: Live) -> None:
    cell = live.run("%%natural\nEVAL sys.exit(0)", timeout=20)
    assert cell.ename == "StepAbortedError"
    assert "raised SystemExit(0): the step was stopped and " in cell.error_text
    assert "changes made in place to objects (such as `items.append(...)`) are not undone" in cell.error_text


def test_twenty_calls_after_an_expression_called_exit_all_work(live: Live) -> None:
    live.run("%%natural\nEVAL sys.exit(0)", timeout=20)
    cell = live.ok("[double(i) for i in range(20)]", timeout=60)
    assert cell.result == repr([2 * i for i in range(20)])


EXITING = BASE_SETUP + '''
@nighthawk.natural_function
def leave() -> int:
    """natural
    RETURN quit()
    """
'''


@pytest.fixture
def exiting() -> Iterator[Live]:
    # A kernel of its own: if the guard failed, the kernel would be gone for every later test.
    with live_kernel(EXITING) as kernel:
        yield kernel


def test_ipython_exit_in_an_expression_ends_the_step_not_the_kernel(exiting: Live) -> None:
    cell = exiting.run("%%natural\nEVAL exit(0)", timeout=20)
    assert cell.ename == "StepAbortedError"
    assert "raised SystemExit" in cell.error_text
    assert exiting.ok("40 + 2", timeout=20).result == "42"
    assert exiting.km.is_alive()


def test_ipython_quit_in_a_natural_function_called_from_a_cell_ends_the_step_not_the_kernel(exiting: Live) -> None:
    cell = exiting.run("leave()", timeout=20)
    assert cell.ename == "StepAbortedError"
    assert exiting.ok("40 + 2", timeout=20).result == "42"
    assert exiting.km.is_alive()
