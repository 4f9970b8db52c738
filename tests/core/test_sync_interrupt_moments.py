"""An interrupt at the two moments of a sync step where it once went astray (`nighthawk.threads._loop.run_sync`).

A real SIGINT lands between two bytecodes of the waiting thread. Two of those places were not covered: just
after the wait took the step's "done" marker (the step had just ended), where the cancel then waited for a
second marker that never came; and while the step's start was being queued on the background loop, where
the step then ran on with no one to serve or cancel it. Each test puts the interrupt exactly there, by
raising KeyboardInterrupt from that place, and runs the sync call on a worker thread so that a wait that
never ends is reported instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Callable, Iterator

import nighthawk as nh
import pytest
from nighthawk.threads import _loop
from scripting import call, finish, scripted_executor

# Only a bound for a wait that never ends; the calls here take milliseconds.
HANG_SECONDS = 30.0


@nh.natural_function
def increment(x: int) -> int:
    y = 0
    """natural
    Set <:y> to <x> + 1.
    """
    return y


def call_on_a_thread(fn: Callable[[], object]) -> str:
    """Run `fn` on a worker thread; the name of what it raised, or `returned`."""
    outcome: list[str] = []

    def run() -> None:
        try:
            fn()
            outcome.append("returned")
        except BaseException as exc:  # noqa: BLE001 - the outcome under test
            outcome.append(type(exc).__name__)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_SECONDS)
    assert not worker.is_alive(), "the interrupted call is still waiting for its step to end"
    return outcome[0]


def increment_one() -> object:
    executor, _ = scripted_executor([call("nh_assign", target_path="y", expression="x + 1")], [finish()])
    with nh.run(executor):
        return increment(1)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = _loop._background_loop()
    yield loop
    vars(loop).pop("call_soon_threadsafe", None)


def running_tasks(loop: asyncio.AbstractEventLoop) -> set[asyncio.Task[object]]:
    async def tasks() -> set[asyncio.Task[object]]:
        await asyncio.sleep(0)  # let callbacks queued before this one run
        return {task for task in asyncio.all_tasks() if task is not asyncio.current_task() and not task.done()}

    return asyncio.run_coroutine_threadsafe(tasks(), loop).result(HANG_SECONDS)


def test_an_interrupt_just_after_the_step_ended_is_raised_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real_serve = _loop._serve

    def serve_then_interrupted(caller: object, interrupts: object) -> None:
        real_serve(caller, interrupts)  # took the "done" marker: the step has ended
        raise KeyboardInterrupt  # the signal lands before `run_sync` returns

    monkeypatch.setattr(_loop, "_serve", serve_then_interrupted)
    assert call_on_a_thread(increment_one) == "KeyboardInterrupt"


def interrupt_when_starting(loop: asyncio.AbstractEventLoop, *, queued: bool) -> None:
    """Make the next queueing of a step's start on `loop` be interrupted, after or before it is queued."""
    real = loop.call_soon_threadsafe

    def interrupted(callback: Callable[..., object], *args: object, **kwargs: object) -> object:
        if getattr(callback, "__name__", "") != "start":
            return real(callback, *args, **kwargs)
        vars(loop).pop("call_soon_threadsafe")  # once
        if queued:
            real(callback, *args, **kwargs)
        raise KeyboardInterrupt

    loop.call_soon_threadsafe = interrupted  # type: ignore[method-assign]


def test_an_interrupt_while_the_step_is_being_started_leaves_no_step_running(loop: asyncio.AbstractEventLoop) -> None:
    before = running_tasks(loop)
    interrupt_when_starting(loop, queued=True)
    assert call_on_a_thread(increment_one) == "KeyboardInterrupt"
    assert running_tasks(loop) - before == set()


def test_an_interrupt_before_the_step_was_queued_leaves_no_coroutine_unclosed(loop: asyncio.AbstractEventLoop) -> None:
    interrupt_when_starting(loop, queued=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert call_on_a_thread(increment_one) == "KeyboardInterrupt"
        gc.collect()
    assert not [warning for warning in caught if "never awaited" in str(warning.message)]
