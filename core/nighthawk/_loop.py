"""Run coroutines to completion from synchronous code, even inside a running event loop.

A Jupyter cell already runs inside the kernel's event loop, so a sync natural function cannot use
`asyncio.run`. A fresh loop per call is also wrong: provider HTTP clients pool connections per loop, and a
closed loop breaks the next request. So every sync step runs on one long-lived loop in a daemon thread.
A step started from inside that loop's thread (a sync natural function called by a tool) runs on the next
loop of a small stack, so it never waits on itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")

_lock = threading.Lock()
_loops: list[asyncio.AbstractEventLoop] = []
_depth = threading.local()


def _loop_at(depth: int) -> asyncio.AbstractEventLoop:
    with _lock:
        while len(_loops) <= depth:
            loop = asyncio.new_event_loop()
            level = len(_loops)

            def serve(loop: asyncio.AbstractEventLoop = loop, level: int = level) -> None:
                _depth.value = level + 1
                asyncio.set_event_loop(loop)
                loop.run_forever()

            threading.Thread(target=serve, name=f"nighthawk-loop-{level}", daemon=True).start()
            _loops.append(loop)
        return _loops[depth]


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on the background loop and wait for it, in the caller's context.

    On KeyboardInterrupt (an interrupted kernel) the task is cancelled and awaited before the interrupt is
    re-raised, so nothing the coroutine would have done afterwards can still happen.
    """
    loop = _loop_at(getattr(_depth, "value", 0))
    context = contextvars.copy_context()
    result: concurrent.futures.Future[T] = concurrent.futures.Future()
    task_box: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coroutine, context=context)
        task_box.append(task)

        def finished(done: asyncio.Task[T]) -> None:
            if done.cancelled():
                result.cancel()
            elif (error := done.exception()) is not None:
                result.set_exception(error)
            else:
                result.set_result(done.result())

        task.add_done_callback(finished)

    loop.call_soon_threadsafe(start)
    try:
        return result.result()
    except KeyboardInterrupt:
        _cancel_and_wait(loop, task_box, result)
        raise


def _cancel_and_wait(
    loop: asyncio.AbstractEventLoop, task_box: list[asyncio.Task[Any]], result: concurrent.futures.Future[Any]
) -> None:
    def cancel() -> None:
        for task in task_box:
            task.cancel()

    loop.call_soon_threadsafe(cancel)
    while True:
        try:
            # `wait()` never sees a future cancelled from another thread as done; `exception()` does.
            result.exception()
            return
        except concurrent.futures.CancelledError:
            return
        except KeyboardInterrupt:  # a second interrupt while cancelling: keep waiting, the task is ending
            continue
