"""`nighthawk.map` in a live kernel with step displays off: nothing shown unless asked for, and "Interrupt kernel"
stops the whole map, keeping the items that had finished for the next run.

The interrupted cell would run for 45 s; the execution timeout (15 s) tells an interrupt that landed from one
that did not, without asserting how fast it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402

SETUP = BASE_SETUP + '''
stalling = True
evaluated = []

def stall(x):
    evaluated.append(x)
    return slow_count(45) if stalling and x >= 10 else x

@nighthawk.natural_function
def tripled(x: int) -> int:
    """natural
    RETURN stall(x) * 3
    """
'''


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_kernel(SETUP) as kernel:
        yield kernel


def test_map_shows_nothing_in_the_cell_with_displays_off(live: Live) -> None:
    cell = live.ok("stalling = False\nlen(nighthawk.map(tripled, range(100, 130), concurrency=4))")
    assert cell.result == "30"
    assert (cell.printed, cell.displayed) == ("", "")  # no progress line: a saved notebook would keep each redraw


def test_map_asked_for_progress_shows_only_its_text_summary_with_displays_off(live: Live) -> None:
    cell = live.ok("stalling = False\nlen(nighthawk.map(tripled, range(200, 230), concurrency=4, progress=True))")
    assert cell.result == "30"
    assert cell.printed == ""
    assert cell.displayed.startswith("nighthawk.map 30/30 | 0 failed | ")


def test_interrupt_stops_the_map_and_the_next_run_runs_only_the_missing_items(live: Live) -> None:
    live.ok("stalling = True\nbefore_threads = threading.active_count()")
    cell = live.run("nighthawk.map(tripled, range(30), concurrency=4, progress=False)", interrupt_after=3.0, timeout=15.0)
    assert cell.ename == "KeyboardInterrupt"
    assert live.ok("threading.active_count() - before_threads").result == "0"
    live.ok("stalling = False\nevaluated.clear()\nresults = nighthawk.map(tripled, range(30), progress=False)")
    assert live.ok("results == [3 * x for x in range(30)]").result == "True"
    # Item 10 started only once 7 items had finished; those are kept. Items still in flight ran again.
    assert live.ok("set(range(10, 30)) <= set(evaluated) and len(evaluated) <= 30 - 7").result == "True"


def test_an_interrupted_map_shows_one_short_message_saying_what_is_kept(live: Live) -> None:
    live.ok('stalling = True\n@nighthawk.natural_function\ndef quadrupled(x: int) -> int:\n    """natural\n    RETURN stall(x) * 4\n    """')
    cell = live.run("nighthawk.map(quadrupled, range(30), concurrency=4, progress=False)", interrupt_after=3.0, timeout=15.0)
    assert cell.ename == "KeyboardInterrupt"
    # Items from 10 on stall: those before finish, and are kept.
    assert re.search(r"KeyboardInterrupt: the map was interrupted; the \d+ finished items are kept for this session", cell.error_text)
    assert len(cell.error_text) < 1_500  # as short as any other error: not the frames of the runtime
