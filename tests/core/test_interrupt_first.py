"""An interrupted map's cancel runs on the background loop before the work already queued there, so Ctrl-C
does not wait behind the queued steps of a thousand items; an item whose start was still queued never starts.

The background loop is held busy by a callback of the test's own while the map is interrupted, so what is
queued behind it, and in which order it runs, does not depend on timing.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable

import pytest

import nighthawk as nh
from nighthawk.threads import _loop
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


def interrupt_the_map(release: threading.Event, errors: list[BaseException], first: Callable[[], None] = lambda: None) -> None:
    """From another thread: call `first`, send Ctrl-C to the main thread as a terminal does, wait until the
    interrupted map has posted its cancel, then let the held loop go on (whatever failed is kept in `errors`)."""
    try:
        first()
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        waiting_for_its_cancel()
    except BaseException as error:  # noqa: BLE001 - the test re-raises it
        errors.append(error)
    finally:
        release.set()


def test_items_still_waiting_to_start_when_a_map_is_interrupted_never_start() -> None:
    started: list[int] = []
    errors: list[BaseException] = []

    async def work(n: int) -> int:
        started.append(n)
        return n

    with held_loop() as release:
        # Once the map has handed every start to the loop (queued behind the held callback) and waits.
        timer = threading.Timer(0.5, interrupt_the_map, (release, errors))
        timer.start()
        with warnings.catch_warnings(record=True) as caught, pytest.raises(KeyboardInterrupt):
            warnings.simplefilter("always")
            nh.map(work, range(50), concurrency=50, progress=False)
        timer.join()
    after_the_loop_ran_what_it_had_queued()

    assert errors == []
    assert started == []
    assert not [warning for warning in caught if "never awaited" in str(warning.message)]


def test_an_interrupted_maps_cancel_runs_before_the_steps_its_items_had_queued() -> None:
    gate = asyncio.Event()
    resumed: list[int] = []
    errors: list[BaseException] = []
    release = threading.Event()

    async def work(n: int) -> int:
        await gate.wait()
        resumed.append(n)  # runs only if the item's wake-up came before the map's cancel
        return n

    def hold_with_the_items_woken() -> None:
        holding = threading.Event()

        def hold() -> None:
            gate.set()  # every item's wake-up is queued now, behind this callback
            holding.set()
            release.wait(30)

        _loop._background_loop().call_soon_threadsafe(hold)
        assert holding.wait(10)

    # Once every item waits at the gate.
    timer = threading.Timer(0.5, interrupt_the_map, (release, errors, hold_with_the_items_woken))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            nh.map(work, range(50), concurrency=50, progress=False)
    finally:
        timer.join()
        release.set()
    after_the_loop_ran_what_it_had_queued()

    assert errors == []
    assert resumed == []
