"""Once a running map has seen one full collection, the heap it found is left out of the next ones.

Python's collector runs a full pass (over every tracked object of the process) each time enough objects
have survived younger passes. A map's items hold their conversation objects across a model's latency, so
they survive and count towards the next full pass: with 32 items in flight, a full pass comes every 250
items or so. Over the heap of a process that has loaded pydantic-ai and an SDK (120,000-150,000 objects; a
kernel with pandas, several times that) each pass stops every thread for 70-150 ms, and every item in flight
waits for it: 1,000 items at 200 ms took 5-6% longer for that alone, and bunched up after each pause.

So after the first full pass that runs while a map does (a pass the process would have made anyway, which
has just collected the garbage of the heap as it stands), that heap is set aside (`gc.freeze`): the later
full passes of the map look at the objects made since. When the last running map ends it is handed back
(`gc.unfreeze`). A map that sees no full pass (most short ones) changes nothing, so a program running many
small maps keeps its ordinary collections. What becomes garbage among the set-aside objects while the map
runs waits for the first full pass after it. A heap somebody else froze (a server before `fork`) is left
as it is; one that user code freezes while a map runs is handed back with the map's.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["set_aside_heap", "set_aside_if_due"]

_lock = threading.Lock()
_running = 0
"""Maps running now, in any thread."""
_due = False
"""A full pass ran while maps were running and nothing was frozen: the heap may be set aside."""
_froze = False
"""Whether the running maps froze the heap (so the last of them unfreezes it)."""


def _watch(phase: str, info: dict[str, Any]) -> None:
    # A collector callback: it only notes the pass. Freezing happens later, outside the collector, at a
    # point where the map's driver is between items (`set_aside_if_due`).
    global _due
    if phase == "stop" and info.get("generation") == 2:
        _due = True


@contextmanager
def set_aside_heap() -> Iterator[None]:
    """Watch for full passes while the body (a map) runs; hand back what was set aside when the last ends."""
    global _running, _due, _froze
    entered = False
    try:
        with _lock:
            if _running == 0:
                _due = False
                gc.callbacks.append(_watch)
            _running += 1
            entered = True
        yield
    finally:
        if entered:
            with _lock:
                _running -= 1
                if _running == 0:
                    gc.callbacks.remove(_watch)
                    if _froze:
                        _froze = False
                        gc.unfreeze()


def set_aside_if_due() -> None:
    """Freeze the heap if a full pass ran during the running maps and nothing else froze it (cheap when not)."""
    global _due, _froze
    if not _due:
        return
    with _lock:
        if _due and _running and not _froze and gc.isenabled() and gc.get_freeze_count() == 0:
            _froze = True  # first: an interrupt between the two must not leave a freeze nobody hands back
            gc.freeze()
        _due = False
