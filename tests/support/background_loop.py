"""Moments of nighthawk's background loop that tests wait for, so that what they check does not depend on timing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from nighthawk.threads import _loop


@contextmanager
def held_loop() -> Iterator[threading.Event]:
    """Hold the background loop until the event yielded is set (at the latest when the block ends)."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(30)

    _loop._background_loop().call_soon_threadsafe(hold)
    assert holding.wait(10)
    try:
        yield release
    finally:
        release.set()


def after_the_loop_ran_what_it_had_queued() -> None:
    """Return once the loop has run what was queued on it now, and what that queued in turn (a task's next step,
    or its done callbacks)."""
    for _ in range(2):
        done = threading.Event()
        _loop._background_loop().call_soon_threadsafe(done.set)
        assert done.wait(30)
