"""While a map runs, the collector's full passes leave out the objects that existed before it started.

Python's collector runs a full pass (over every tracked object of the process) each time enough objects
have survived younger passes. A map's items hold their conversation objects across a model's latency, so
they survive and count towards the next full pass: with 32 items in flight, a full pass comes every 250
items or so. Over the heap of a process that has loaded pydantic-ai and an SDK (150,000 objects; a kernel
with pandas, several times that) each pass stops every thread for about 100 ms, and every item in flight
waits for it: 1,000 items at 200 ms took 5-6% longer for that alone, and bunched up after each pause.

So, for the map's duration, the objects that existed before it are set aside (`gc.freeze`): the full passes
look at the map's own objects only. When the map ends they are handed back (`gc.unfreeze`) and are
collected as before; garbage among them waits for the first full pass after the map. A heap somebody else
froze (a server before `fork`) is left as it is, and nested or concurrent maps set it aside once.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["set_aside_heap"]

_lock = threading.Lock()
_holders = 0
_froze = False
"""Whether the outermost running map froze the heap (and so unfreezes it when the last map ends)."""


@contextmanager
def set_aside_heap() -> Iterator[None]:
    """Leave the objects that exist now out of the collector's passes until the last running map ends."""
    global _holders, _froze
    with _lock:
        if _holders == 0:
            _froze = gc.isenabled() and gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _froze:
                _froze = False
                gc.unfreeze()
