"""While maps run, the heap they found is left out of the full collections.

Python's collector runs a full pass (over every tracked object of the process) each time enough objects
have survived younger passes. A map's items hold their conversation objects across a model's latency, so
they survive and count towards the next full pass: with 32 items in flight, a full pass comes every 250
items or so. Over the heap of a process that has loaded pydantic-ai and an SDK (120,000-150,000 objects; a
kernel with pandas, several times that) each pass stops every thread for 70-150 ms, and every item in flight
waits for it: 1,000 items at 200 ms took 5-6% longer for that alone, and bunched up after each pause.

So that heap is set aside (`gc.freeze`) and the full passes of a map look at the objects made since; when
the last running map ends it is handed back (`gc.unfreeze`). When is the question: a freeze starts the
collector's counts over (the young passes made towards the next full pass; checked on 3.11 and 3.13), so a
freeze at every map's start would keep a program of many small maps from ever making a full pass again, and
its cyclic garbage would pile up. So a map sets the heap aside at its start only if a full pass has run
since a map last handed it back; otherwise it waits for the first full pass during the map (one the process
would have made anyway, right after which the counts are zero). A freeze then comes at most once per full
pass and costs at most the young passes counted since that pass: a short map right after another changes
nothing. A map of fewer than `SHORT_MAP_ITEMS` items (known from its iterables) leaves the collector alone:
a trial run of a few items before the real map (or a benchmark's warm-up) would otherwise spend the full
pass the real map's freeze waits for, and that map would pay a walk over the whole heap. Each later full
pass during a map is followed by another freeze (at the next item's end or the next tick of the map, once a
second), which sets aside what the map itself keeps alive: with thousands of items in flight (a batch map
holds them all), their conversations made every full pass walk millions of objects, 0.6-3 s each, one every
second or two, and an interrupt landing in one waited for it. What becomes garbage among the set-aside
objects while the map runs waits for the first full pass after it. A heap somebody else froze (a server
before `fork`) is left as it is; one that user code freezes while a map runs is handed back with the map's.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

__all__ = ["PAUSE_MAX_S", "SHORT_MAP_ITEMS", "pause_collection", "set_aside_heap", "set_aside_if_due"]

SHORT_MAP_ITEMS = 64
"""Maps known to have fewer items than this neither set the heap aside nor hand it back (module note)."""

PAUSE_MAX_S = 10.0
"""Seconds a `pause_collection` lasts at most, if nobody ends it sooner."""

_lock = threading.Lock()
_running = 0
"""Maps running now, in any thread."""
_due = False
"""The heap may be set aside: a full pass ran since it was handed back (before a map's start or during it)."""
_froze = False
"""Whether the running maps froze the heap (so the last of them unfreezes it)."""
_passes_at_hand_back = 0
"""The collector's count of full passes when maps last handed the heap back."""
_pauses = 0
"""`pause_collection`s not yet ended."""
_paused_collector = False
"""Whether the first of them stopped a running collector (so the last one starts it again)."""


def _full_passes() -> int:
    return gc.get_stats()[2]["collections"]


def _watch(phase: str, info: dict[str, Any]) -> None:
    # A collector callback: it only notes the pass. Freezing happens later, outside the collector, at a
    # point where the map's driver is between items (`set_aside_if_due`).
    global _due
    if phase == "stop" and info.get("generation") == 2:
        _due = True


@contextmanager
def set_aside_heap(items: int | None = None) -> Iterator[None]:
    """Set the heap aside for the body (a map of `items` items, `None` when not known) if a full pass ran since
    it was last handed back, else watch for a full pass while the body runs; hand back what was set aside when
    the last running map ends. A short map running alone leaves the collector alone."""
    global _running, _due, _froze, _passes_at_hand_back
    if items is not None and items < SHORT_MAP_ITEMS and _running == 0:
        yield
        return
    entered = False
    try:
        with _lock:
            if _running == 0:
                _due = _full_passes() != _passes_at_hand_back
                if _watch not in gc.callbacks:  # (left there by an interrupt on the way in)
                    gc.callbacks.append(_watch)
            _running, entered = _running + 1, True  # one statement: no interrupt between the two
        set_aside_if_due()
        yield
    finally:
        if entered:
            with _lock:
                _running -= 1
                if _running == 0:
                    if _froze:
                        _froze = False
                        gc.unfreeze()
                        _passes_at_hand_back = _full_passes()
                    with suppress(ValueError):  # user code may have cleared the callbacks
                        gc.callbacks.remove(_watch)


def set_aside_if_due() -> None:
    """Freeze the heap if it is due (see the module's note) and nothing else froze it (a map may freeze it
    again); cheap when not due."""
    global _due, _froze
    if not _due:
        return
    with _lock:
        if not gc.isenabled():
            return  # stopped (by the user, or paused): nothing to set aside from, and still due after
        if _due and _running and (_froze or gc.get_freeze_count() == 0):
            _froze = True  # first: an interrupt between the two must not leave a freeze nobody hands back
            gc.freeze()
        _due = False


def pause_collection() -> Callable[[], None]:
    """Stop the collector until the function returned is called (a second call does nothing); pauses that
    overlap end with the last of them, and a collector stopped before the first (by the user) stays stopped.

    For an interrupted map: cancelling thousands of items makes garbage fast (each unwinds through the model
    library), and a full pass over their objects, 0.2-0.9 s, stops every thread, the one giving the user their
    prompt back included. Paused, the pass comes once they have unwound (or later), not in the interrupt's way.
    """
    global _pauses, _paused_collector
    with _lock:
        if _pauses == 0:
            _paused_collector = gc.isenabled()
            gc.disable()
        _pauses += 1
    resumed = False

    def resume() -> None:
        global _pauses
        nonlocal resumed
        with _lock:
            if resumed:
                return
            resumed = True
            _pauses -= 1
            if _pauses == 0 and _paused_collector:
                gc.enable()

    return resume
