"""An interrupted map's cancel runs on the background loop before the work already queued there, so Ctrl-C
does not wait behind the queued steps of a thousand items; an item whose start was still queued never starts.

The background loop is held busy by a callback of the test's own while the map is interrupted, so what is
queued behind it, and in which order it runs, does not depend on timing.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import warnings

import pytest

import nighthawk as nh
from nighthawk import _loop
from support.background_loop import after_the_loop_ran_what_it_had_queued, held_loop

pytestmark = pytest.mark.timeout(60)


def waiting_for_its_cancel() -> None:
    """Return once the main thread, interrupted in a map, waits for the loop to run the cancel it posted."""
    main = threading.main_thread().ident
    for _ in range(1000):
        frame = sys._current_frames().get(main)
        names = []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        if "_cancel_all" in names and names[0] == "wait":
            return
        time.sleep(0.01)
    raise AssertionError("the interrupted map never waited for its cancel")


def test_a_callback_posted_first_runs_before_what_the_loop_had_queued() -> None:
    loop = _loop._background_loop()
    ran: list[str] = []
    with held_loop():
        for n in range(100):
            loop.call_soon_threadsafe(ran.append, f"queued {n}")
        _loop.call_first_threadsafe(loop, lambda: ran.append("first"))
    after_the_loop_ran_what_it_had_queued()

    assert ran[0] == "first" and len(ran) == 101


def test_items_still_waiting_to_start_when_a_map_is_interrupted_never_start() -> None:
    started: list[int] = []

    async def work(n: int) -> int:
        started.append(n)
        return n

    with held_loop() as release:

        def interrupt_then_release() -> None:
            # Ctrl-C, as a terminal sends it: the map is waiting for its items, none of which has started.
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            waiting_for_its_cancel()  # posted, behind the held callback: the loop may go on
            release.set()

        # Once the map has handed every start to the loop (queued behind the held callback) and waits.
        timer = threading.Timer(0.5, interrupt_then_release)
        timer.start()
        with warnings.catch_warnings(record=True) as caught, pytest.raises(KeyboardInterrupt):
            warnings.simplefilter("always")
            nh.map(work, range(50), concurrency=50, progress=False)
        timer.join()
    after_the_loop_ran_what_it_had_queued()

    assert started == []
    assert not [warning for warning in caught if "never awaited" in str(warning.message)]

