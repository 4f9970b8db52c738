"""What a front end gets ready the first time this process runs something, rather than when it loads.

The kernel extension registers its preparation here at `%load_ext` (installing the kernel's executor, the
step displayer and the map view imports the executor and the display stack, which a notebook that never
runs a step does not need). The first run, scope, block, executor lookup or map calls `prepare_pending`,
which runs what is pending once, in the thread that got there first; after that it is a check of an empty
list. A preparation that fails or is interrupted stays pending, so the next use tries again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["forget_preparation", "prepare_on_first_use", "prepare_pending"]

_pending: list[Callable[[], None]] = []
# Held while preparing, so another thread's first use waits until the front end is ready; reentrant because
# a preparation may itself look up the executor, which comes back here (and returns at once: `_preparing`).
_lock = threading.RLock()
_preparing = False


def prepare_on_first_use(prepare: Callable[[], None]) -> None:
    """Call `prepare` before the next run, scope, block, executor lookup or map (once; idempotent)."""
    with _lock:
        if prepare not in _pending:
            _pending.append(prepare)


def forget_preparation(prepare: Callable[[], None]) -> None:
    """Drop `prepare` if it has not run yet (a front end unloaded before anything ran)."""
    with _lock:
        if prepare in _pending:
            _pending.remove(prepare)


def prepare_pending() -> None:
    """Run the pending preparations (cheap when there are none: the common case after the first use)."""
    global _preparing
    if not _pending:
        return
    with _lock:
        if _preparing:
            return
        _preparing = True
        try:
            while _pending:
                prepare = _pending[0]
                prepare()  # raising (or interrupted) leaves it pending for the next use
                if prepare in _pending:
                    _pending.remove(prepare)
        finally:
            _preparing = False
