"""A wall-time budget bounds the whole step, the user's code included: an expression that sleeps or loops, a
`__repr__` rendered into the prompt, a blocking tool; on the main thread and on any other. The step ends with
`BudgetExceededError` reporting the time that passed, and nothing is committed.

Each stopped piece of user code would run for 30 s; returning within 10 s tells a stop from a run to the end
without timing the stop itself.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai import RunContext
from scripting import call, finish, scripted_executor

import nighthawk as nh

RUNS_FOR_S = 30
LONG_ENOUGH_S = 10  # well under RUNS_FOR_S: the user code was stopped, it did not run to its end


def spin(seconds: float) -> int:
    """Pure-Python work that never blocks and never returns to a caller for `seconds`."""
    until, turns = time.monotonic() + seconds, 0
    while time.monotonic() < until:
        turns += 1
    return turns


class SlowRepr:
    """A value whose `__repr__` (called while the prompt is rendered) takes 30 s."""

    def __repr__(self) -> str:
        time.sleep(RUNS_FOR_S)
        return "SlowRepr()"


@nh.natural_function
def fill(rows: list[int]) -> int:
    total = 0
    """natural
    Work on <rows>, then store the sum in <:total>.
    """
    return total


def run_fill(*rounds: Any, wall_time_s: float = 1.0) -> tuple[nh.BudgetExceededError, list[int], float]:
    """Run `fill` under a wall-time step budget; return the error, the list it was given and the time taken."""
    executor, _ = scripted_executor(*rounds, step_budget=nh.UsageBudget(wall_time_s=wall_time_s))
    rows = [1, 2, 3]
    started = time.monotonic()
    with nh.run(executor), pytest.raises(nh.BudgetExceededError, match=r"step budget `wall_time_s` of 1\.0 s") as caught:
        fill(rows)
    return caught.value, rows, time.monotonic() - started


def evaluating(expression: str) -> list[Any]:
    """Rounds: evaluate `expression`, then store the sum and pass (never reached when the step is stopped)."""
    return [[call("nh_eval", expression=expression)], [call("nh_assign", target_path="total", expression="sum(rows)"), finish()]]


def on_another_thread(work: Callable[[], object]) -> object:
    """Run `work` on a plain thread and return what it returned or raised."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(RUNS_FOR_S * 2)
    assert not thread.is_alive()
    return box[0]


def test_sleeping_expression_is_stopped_at_the_wall_time_budget():
    error, rows, took = run_fill(*evaluating(f"time.sleep({RUNS_FOR_S}) or rows.append(4)"))
    assert took < LONG_ENOUGH_S
    assert rows == [1, 2, 3]  # the expression never got past the sleep
    assert (error.level, error.budget) == ("step", "wall_time_s")


def test_pure_python_loop_in_an_expression_is_stopped_at_the_wall_time_budget():
    error, rows, took = run_fill(*evaluating(f"spin({RUNS_FOR_S})"))
    assert took < LONG_ENOUGH_S
    assert error.budget == "wall_time_s"


def test_expression_stopped_by_the_wall_time_budget_commits_nothing():
    @nh.natural_function
    def keep(x: int) -> int:
        y = 0
        """natural
        Store <x> in <:y>, then check it.
        """
        return y

    rounds = [
        [call("nh_assign", target_path="y", expression="x")],
        [call("nh_eval", expression=f"(y := 99) and time.sleep({RUNS_FOR_S})")],
        [finish()],
    ]
    executor, _ = scripted_executor(*rounds, step_budget=nh.UsageBudget(wall_time_s=1.0))
    y = "before"
    started = time.monotonic()
    with nh.run(executor), pytest.raises(nh.BudgetExceededError):
        y = keep(5)
    assert time.monotonic() - started < LONG_ENOUGH_S
    assert y == "before"


def test_slow_repr_of_a_value_in_scope_is_cut_while_the_prompt_is_rendered():
    @nh.natural_function
    def describe(item: object) -> str:
        text = ""
        """natural
        Describe <item> in <:text>.
        """
        return text

    executor, script = scripted_executor(
        [call("nh_assign", target_path="text", expression="'described'"), finish()],
        step_budget=nh.UsageBudget(wall_time_s=1.0),
    )
    started = time.monotonic()
    with nh.run(executor), pytest.raises(nh.BudgetExceededError, match=r"`wall_time_s` of 1\.0 s"):
        describe(SlowRepr())
    assert time.monotonic() - started < LONG_ENOUGH_S
    assert script.requests == 0  # stopped before the prompt was sent


def test_wall_time_error_reports_the_time_that_passed_not_the_limit():
    error, _, took = run_fill(*evaluating("spin(1.5)"))
    assert error.limit == 1.0
    assert 1.0 < error.reached <= took
    shown = re.search(r"was reached \((\d+\.\d+) s\)", str(error))
    assert shown is not None and abs(float(shown.group(1)) - error.reached) < 0.006  # in hundredths


def test_sleeping_expression_is_stopped_on_a_plain_thread_too():
    def work() -> object:
        return run_fill(*evaluating(f"spin({RUNS_FOR_S})"))

    error, rows, took = on_another_thread(work)  # type: ignore[misc]
    assert took < LONG_ENOUGH_S
    assert error.budget == "wall_time_s"
    assert rows == [1, 2, 3]


def test_busy_expression_in_an_async_natural_function_is_stopped_at_the_wall_time_budget():
    @nh.natural_function
    async def fill_async(rows: list[int]) -> int:
        total = 0
        """natural
        Work on <rows>, then store the sum in <:total>.
        """
        return total

    executor, _ = scripted_executor(*evaluating(f"spin({RUNS_FOR_S})"), step_budget=nh.UsageBudget(wall_time_s=1.0))

    async def main() -> None:
        with nh.run(executor), pytest.raises(nh.BudgetExceededError, match=r"`wall_time_s` of 1\.0 s"):
            await fill_async([1, 2, 3])

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < LONG_ENOUGH_S


def test_stopped_step_leaves_no_interrupt_behind_for_the_next_line():
    _, _, took = run_fill(*evaluating(f"spin({RUNS_FOR_S})"))
    assert took < LONG_ENOUGH_S
    # A stray interrupt would land in this loop as a KeyboardInterrupt.
    assert spin(0.3) > 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_step_in_a_process_the_user_forked_is_stopped_at_the_wall_time_budget():
    # The watchdog thread runs in this process now; a fork (a `multiprocessing` pool's worker, say) has a
    # dead copy of it, and of the lock it may have held at that moment.
    run_fill(*evaluating(f"spin({RUNS_FOR_S})"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # forking with threads: the child calls none of theirs
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _, rows, took = run_fill(*evaluating(f"time.sleep({RUNS_FOR_S}) or rows.append(4)"))
            code = 0 if took < LONG_ENOUGH_S and rows == [1, 2, 3] else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + RUNS_FOR_S * 2
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if ended[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert ended[0] == pid and os.waitstatus_to_exitcode(ended[1]) == 0  # 2: it slept on; 1: it failed otherwise


def test_stopping_a_step_keeps_the_users_own_sigint_handler():
    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        error, _, took = run_fill(*evaluating(f"spin({RUNS_FOR_S})"))
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
    assert took < LONG_ENOUGH_S
    assert error.budget == "wall_time_s"
    assert seen == []  # the user's handler was not called for our deadline


def test_blocking_user_tool_is_stopped_at_the_wall_time_budget():
    released = threading.Event()

    def wait_for_rows(ctx: RunContext[Any]) -> str:
        """Wait for rows that never come."""
        released.wait(RUNS_FOR_S)
        return "rows"

    executor, _ = scripted_executor([call("wait_for_rows")], [finish()], step_budget=nh.UsageBudget(wall_time_s=1.0))
    started = time.monotonic()
    try:
        with nh.run(executor), pytest.raises(nh.BudgetExceededError, match=r"`wall_time_s` of 1\.0 s"):
            nh.tool(wait_for_rows)
            fill([1])
    finally:
        released.set()
    assert time.monotonic() - started < LONG_ENOUGH_S


def test_cell_wall_time_budget_names_its_own_limit_and_the_time_since_it_opened():
    executor, _ = scripted_executor(*evaluating(f"spin({RUNS_FOR_S})"))
    with nh.run(executor), nh.budget(wall_time_s=1.0), pytest.raises(nh.BudgetExceededError) as caught:
        spin(0.4)
        fill([1])
    assert (caught.value.level, caught.value.limit) == ("cell", 1.0)
    assert caught.value.reached > 1.0


def test_wall_time_error_names_the_uncommitted_bindings_and_the_changes_made_in_place():
    @nh.natural_function
    def collect(items: list[int]) -> int:
        count = 0
        """natural
        Append to <items>, then store how many there are in <:count>.
        """
        return count

    rounds = [
        [call("nh_eval", expression="items.append(4)")],
        [call("nh_eval", expression=f"time.sleep({RUNS_FOR_S})")],
        [finish()],
    ]
    executor, _ = scripted_executor(*rounds, step_budget=nh.UsageBudget(wall_time_s=1.0))
    items = [1, 2, 3]
    with nh.run(executor), pytest.raises(nh.BudgetExceededError) as caught:
        collect(items)
    message = str(caught.value)
    assert "nothing was committed" not in message  # the append below stayed: "nothing" would be untrue
    assert "`count` was not committed" in message
    assert "changes made in place to objects (such as `items.append(...)`) are not undone" in message
    assert items == [1, 2, 3, 4]


def test_the_outermost_block_names_its_bindings_when_an_inner_step_is_stopped():
    @nh.natural_function
    def inner(x: int) -> int:
        doubled = 0
        """natural
        Store twice <x> in <:doubled>.
        """
        return doubled

    @nh.natural_function
    def outer(x: int) -> int:
        first = second = 0
        """natural
        Call <inner> on <x>, store the answers in <:first> and <:second>.
        """
        return first + second

    rounds = [
        [call("nh_eval", expression="inner(x)")],
        [call("nh_eval", expression=f"time.sleep({RUNS_FOR_S})")],
        [finish()],
    ]
    executor, _ = scripted_executor(*rounds, step_budget=nh.UsageBudget(wall_time_s=1.0))
    with nh.run(executor), pytest.raises(nh.BudgetExceededError) as caught:
        outer(2)
    assert "`first`, `second` were not committed" in str(caught.value)
