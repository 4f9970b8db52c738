"""`nighthawk.map`: many calls of one natural function, the waits overlapped, user code on the caller.

The model here is a scripted async pydantic-ai model with a small delay, so items genuinely overlap on the
background loop; what an item answers is decided by its return expression, which runs on the caller's
thread against the item's own arguments.
"""

from __future__ import annotations

import asyncio
import importlib.util
import gc
import itertools
import linecache
import os
import signal
import sqlite3
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh


pytestmark = pytest.mark.usefixtures("fresh_session_store")


class Model:
    """An async scripted model: every step returns `expression` (or passes when it is `None`), after calling
    `tool` first if given; counts requests and the most in flight."""

    def __init__(
        self, expression: str | None, *, tool: str | None = None, gate: int = 0, delay_s: float = 0.005, name: str = "scripted"
    ) -> None:
        self.expression = expression
        self.tool = tool
        self.gate = gate
        """Hold each request until this many were in flight at once (at most 10 s): shows the overlap
        without depending on how fast this machine is."""
        self.delay_s = delay_s
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self.name = name

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            for _ in range(10_000):
                if self.peak >= self.gate:
                    break
                await asyncio.sleep(0.001)
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        if self.tool is not None and len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(self.tool, {})])
        if self.expression is None:
            return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": self.expression})])

    def executor(self) -> nh.AgentStepExecutor:
        model = FunctionModel(self, model_name=self.name)
        return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))


@nh.natural_function
def add(a: int, b: int) -> int:
    """natural
    Add <a> and <b>.
    """


@nh.natural_function
async def add_async(a: int, b: int) -> int:
    """natural
    Add <a> and <b>.
    """


@nh.natural_function
def lookup(conn: sqlite3.Connection, key: int) -> int:
    """natural
    Look <key> up in <conn>.
    """


@nh.natural_function
async def lookup_async(conn: sqlite3.Connection, key: int) -> int:
    """natural
    Look <key> up in <conn>.
    """


SYNC_AND_ASYNC = pytest.mark.parametrize("function", [add, add_async], ids=["sync", "async"])
LOOKUPS = pytest.mark.parametrize("function", [lookup, lookup_async], ids=["sync", "async"])

def fail_at(key: int, bad: set[int]) -> int:
    if key in bad:
        raise ValueError(f"no answer for {key}")
    return key


steps: dict[int, set[str]] = {}


def flaky(key: int, failures: int) -> int:
    """Fails in the first `failures` steps that ask about `key` (every time each of them asks)."""
    seen = steps.setdefault(key, set())
    seen.add(nh.get_current_step_context().invocation_id)
    if len(seen) <= failures:
        raise ValueError(f"flaky {key}")
    return key


def interrupt_at(key: int, at: int) -> int:
    if key == at:
        raise KeyboardInterrupt
    return key


def keyed_table(count: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")  # bound to this (the caller's) thread
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(k, k * 10) for k in range(count)])
    return conn


# --- shape and order ----------------------------------------------------------------------------------


@SYNC_AND_ASYNC
def test_results_follow_the_input_order_of_zipped_iterables(function: Callable[..., object]) -> None:
    model = Model("a + b")
    with nh.run(model.executor()):
        result = nh.map(function, [1, 2, 3, 4, 5], [10, 20, 30, 40, 50], concurrency=3, progress=False)
    assert list(result) == [11, 22, 33, 44, 55]


def test_a_callable_that_calls_a_natural_function_can_be_mapped() -> None:
    model = Model("a + b")
    with nh.run(model.executor()):
        result = nh.map(lambda x: add(x, 100), [1, 2, 3], progress=False)
    assert list(result) == [101, 102, 103]


def test_an_async_callable_that_awaits_a_natural_function_can_be_mapped() -> None:
    model = Model("a + b")

    async def twice(x: int) -> int:
        return await add_async(x, x)

    with nh.run(model.executor()):
        result = nh.map(twice, [1, 2, 3], progress=False)
    assert list(result) == [2, 4, 6]


@SYNC_AND_ASYNC
def test_runs_concurrency_items_at_once(function: Callable[..., object]) -> None:
    model = Model("a + b", gate=8)
    with nh.run(model.executor()):
        nh.map(function, range(40), range(40), concurrency=8, progress=False)
    assert model.peak == 8


def test_a_sync_function_whose_source_file_is_gone_still_has_its_items_in_flight_together(tmp_path: Path) -> None:
    # As on a Ray actor, which receives the function by value and has no file to read it from.
    path = tmp_path / "vanishing.py"
    path.write_text('import nighthawk as nh\n\n\n@nh.natural_function\ndef add(a: int, b: int) -> int:\n    """natural\n    Add <a> and <b>.\n    """\n')
    spec = importlib.util.spec_from_file_location("vanishing", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path.unlink()
    linecache.clearcache()
    model = Model("a + b", gate=4)
    with nh.run(model.executor()):
        result = nh.map(module.add, range(4), range(4), concurrency=4, progress=False)
    assert list(result) == [0, 2, 4, 6]
    assert model.peak == 4


finished: list[int] = []


def finish(value: int) -> int:
    finished.append(value)
    return value


@SYNC_AND_ASYNC
def test_a_generator_is_read_only_as_places_free_up(function: Callable[..., object]) -> None:
    finished.clear()
    ahead: list[int] = []

    def numbers() -> Iterator[int]:
        for n in range(100):
            ahead.append(n - len(finished))  # items read but not finished, this one included
            yield n

    model = Model("finish(a)")
    with nh.run(model.executor()):
        nh.map(function, numbers(), itertools.repeat(0), concurrency=4, progress=False)
    assert max(ahead) <= 4


# --- user code on the caller's thread ------------------------------------------------------------------


@LOOKUPS
def test_a_thread_bound_sqlite_connection_works_for_200_items_at_concurrency_16(function: Callable[..., object]) -> None:
    conn = keyed_table(200)
    model = Model("conn.execute('SELECT v FROM t WHERE k = ?', (key,)).fetchone()[0]", gate=16)
    with nh.run(model.executor()):
        result = nh.map(function, itertools.repeat(conn), range(200), concurrency=16, on_error="collect", progress=False)
    assert result.errors == {}
    assert list(result) == [k * 10 for k in range(200)]
    assert model.peak == 16


@nh.natural_function
def lookup_around(conn: sqlite3.Connection, key: int) -> int:
    value = conn.execute("SELECT v FROM t WHERE k = ?", (key,)).fetchone()[0]
    """natural
    Think about <value>.
    """
    return conn.execute("SELECT v FROM t WHERE k = ?", (key + 1,)).fetchone()[0] + value


def test_the_python_around_the_blocks_of_a_sync_function_runs_on_the_caller_thread() -> None:
    conn = keyed_table(50)
    model = Model(None, delay_s=0.01)
    with nh.run(model.executor()):
        result = nh.map(lookup_around, itertools.repeat(conn), range(40), concurrency=8, progress=False)
    assert list(result) == [(k + 1) * 10 + k * 10 for k in range(40)]


def test_tools_of_every_item_run_on_the_caller_thread() -> None:
    threads: set[str] = set()

    def whereami(context: RunContext[nh.StepContext]) -> str:
        """Name this thread."""
        threads.add(threading.current_thread().name)
        return "here"

    model = Model("a + b", tool="whereami")
    with nh.run(model.executor()):
        nh.tool(whereami)
        result = nh.map(add, range(30), range(30), concurrency=10, progress=False)
    assert list(result) == [2 * k for k in range(30)]
    assert threads == {threading.current_thread().name}


@SYNC_AND_ASYNC
def test_map_works_in_sync_code_called_while_an_event_loop_runs(function: Callable[..., object]) -> None:
    model = Model("a + b")

    def helper() -> list[object]:
        return list(nh.map(function, [1, 2, 3], [1, 1, 1], progress=False))

    async def main() -> list[object]:
        return helper()

    with nh.run(model.executor()):
        assert asyncio.run(main()) == [2, 3, 4]


# --- errors and retries --------------------------------------------------------------------------------


@SYNC_AND_ASYNC
def test_first_failed_item_stops_the_map_naming_its_index(function: Callable[..., object]) -> None:
    model = Model("fail_at(a, {3})")
    with nh.run(model.executor()), pytest.raises(nh.MapItemError, match=r"item 3 of the map failed: ExecutionError") as caught:
        nh.map(function, range(100), range(100), concurrency=4, progress=False)
    assert isinstance(caught.value.__cause__, nh.ExecutionError)
    assert caught.value.index == 3
    assert model.requests < 100


def test_a_stopped_async_map_leaves_no_coroutine_never_awaited() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):  # the item cancelled before its task starts is a matter of timing
            with nh.run(Model("fail_at(a, {0})").executor()), pytest.raises(nh.MapItemError):
                nh.map(add_async, range(40), range(40), concurrency=16, progress=False)
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


@SYNC_AND_ASYNC
def test_collect_puts_none_at_failed_positions_and_keeps_the_errors(function: Callable[..., object]) -> None:
    model = Model("fail_at(a, {1, 4})")
    with nh.run(model.executor()):
        result = nh.map(function, range(6), range(6), on_error="collect", progress=False)
    assert list(result) == [0, None, 2, 3, None, 5]
    assert sorted(result.errors) == [1, 4]
    assert all(isinstance(error, nh.ExecutionError) for error in result.errors.values())


@SYNC_AND_ASYNC
def test_retries_run_a_failed_item_again(function: Callable[..., object]) -> None:
    steps.clear()
    model = Model("flaky(a, 2)")
    with nh.run(model.executor()):
        result = nh.map(function, range(5), range(5), retries=2, progress=False)
    assert list(result) == [0, 1, 2, 3, 4]
    assert [len(steps[key]) for key in range(5)] == [3, 3, 3, 3, 3]


def test_an_item_failing_more_often_than_its_retries_fails() -> None:
    steps.clear()
    model = Model("flaky(a, 2)")
    with nh.run(model.executor()), pytest.raises(nh.MapItemError, match="raised ValueError: flaky 0"):
        nh.map(add, [0], [0], retries=1, progress=False)


def test_a_budget_stop_is_not_retried_and_keeps_what_finished() -> None:
    model = Model("a + b")
    with nh.run(model.executor()):
        with nh.budget(requests=3), pytest.raises(nh.BudgetExceededError):
            nh.map(add, range(10), range(10), concurrency=1, retries=5, progress=False)
        assert model.requests == 3
        result = nh.map(add, range(10), range(10), progress=False)
    assert list(result) == [2 * k for k in range(10)]
    assert model.requests == 10


# --- keeping what was done -------------------------------------------------------------------------------


@SYNC_AND_ASYNC
def test_running_the_same_map_again_runs_only_the_missing_items(function: Callable[..., object]) -> None:
    with nh.run(Model("fail_at(a, {2, 7})").executor()):
        first = nh.map(function, range(10), range(10), on_error="collect", progress=False)
    assert sorted(first.errors) == [2, 7]
    model = Model("a + b")
    with nh.run(model.executor()):
        second = nh.map(function, range(10), range(10), progress=False)
    assert list(second) == [0, 1, 4, 3, 4, 5, 6, 14, 8, 9]  # kept items keep their first answer
    assert model.requests == 2


def test_another_model_runs_the_items_again() -> None:
    with nh.run(Model("a + b", name="one").executor()):
        nh.map(add, range(4), range(4), progress=False)
    other = Model("a * b", name="other")
    with nh.run(other.executor()):
        result = nh.map(add, range(4), range(4), progress=False)
    assert list(result) == [0, 1, 4, 9]
    assert other.requests == 4


@SYNC_AND_ASYNC
def test_an_interrupt_keeps_finished_items_and_sends_nothing_after(function: Callable[..., object]) -> None:
    model = Model("interrupt_at(a, 20)")  # answers `a`: the map of the same items below answers `a + 1`
    with nh.run(model.executor()), pytest.raises(KeyboardInterrupt):
        nh.map(function, range(50), itertools.repeat(1), concurrency=4, progress=False)
    sent = model.requests
    asyncio.run(asyncio.sleep(0.1))  # anything still running on the background loop would send now
    assert model.requests == sent
    again = Model("a + b")
    with nh.run(again.executor()):
        result = nh.map(function, range(50), itertools.repeat(1), concurrency=4, progress=False)
    kept = [k for k in range(50) if result[k] == k]
    assert kept[:17] == list(range(17))  # item 20 started only once 17 had finished
    assert all(result[k] == k + 1 for k in range(50) if k not in kept)
    assert again.requests == 50 - len(kept)


def test_items_with_an_argument_kept_by_identity_resume_in_the_same_session() -> None:
    conn = keyed_table(10)
    expression = "conn.execute('SELECT v FROM t WHERE k = ?', (key,)).fetchone()[0]"
    with nh.run(Model(f"fail_at(key, {{3}}) and {expression}").executor()):
        first = nh.map(lookup, itertools.repeat(conn), range(10), on_error="collect", progress=False)
    assert sorted(first.errors) == [3]
    model = Model(expression)
    with nh.run(model.executor()):
        second = nh.map(lookup, itertools.repeat(conn), range(10), progress=False)
    assert list(second) == [k * 10 for k in range(10)]
    assert model.requests == 1


def test_a_call_with_the_wrong_arguments_is_that_item_failing() -> None:
    with nh.run(Model("a + b").executor()):
        result = nh.map(add, [1, 2], on_error="collect", progress=False)
    assert list(result) == [None, None]
    assert all(isinstance(error, TypeError) for error in result.errors.values())


class HangingModel(Model):
    """Answers the first `quick` requests at once; later ones wait (at most 30 s) until cancelled."""

    def __init__(self, quick: int, *, hanging: int = 0) -> None:
        super().__init__("a")
        self.quick = quick
        self.cancelled = 0
        self.all_hanging = threading.Event()
        """Set once `hanging` requests wait: the moment to interrupt, however fast this machine is."""
        self._hanging = hanging

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if self.requests >= self.quick:
            self.requests += 1
            if self.requests - self.quick >= self._hanging:
                self.all_hanging.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return await super().__call__(messages, info)


@SYNC_AND_ASYNC
def test_an_interrupt_while_items_wait_for_the_model_cancels_them_and_keeps_the_finished(function: Callable[..., object]) -> None:
    model = HangingModel(quick=10, hanging=4)

    def press_ctrl_c() -> None:  # a real Ctrl-C, on the main thread, once the 4 places all wait
        if model.all_hanging.wait(30):
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    with nh.run(model.executor()), pytest.raises(KeyboardInterrupt):
        presser.start()
        nh.map(function, range(30), itertools.repeat(1), concurrency=4, progress=False)
    presser.join()
    sent = model.requests
    asyncio.run(asyncio.sleep(0.1))  # anything still running on the background loop would send now
    assert (model.requests, model.cancelled) == (sent, 4)
    again = HangingModel(quick=30)  # the same model (a different one would run every item again), now quick
    again.expression = "a + b"
    with nh.run(again.executor()):
        result = nh.map(function, range(30), itertools.repeat(1), concurrency=4, progress=False)
    assert list(result) == list(range(10)) + [k + 1 for k in range(10, 30)]
    assert again.requests == 20


# --- progress and usage --------------------------------------------------------------------------------


def test_progress_line_on_stderr_ends_with_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    with nh.run(Model("fail_at(a, {1})").executor()):
        nh.map(add, range(3), range(3), on_error="collect", progress=True)
    line = capsys.readouterr().err.rstrip("\n").split("\r")[-1]
    assert line.startswith("nighthawk.map 2/3 | 1 failed | ")
    assert "tokens" in line


def test_progress_false_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with nh.run(Model("a + b").executor()):
        nh.map(add, range(3), range(3), progress=False)
    assert capsys.readouterr().err == ""


def test_progress_is_off_by_default_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with nh.run(Model("a + b").executor()):
        nh.map(add, range(3), range(3))
    assert capsys.readouterr().err == ""


@SYNC_AND_ASYNC
def test_result_carries_the_usage_of_the_run(function: Callable[..., object]) -> None:
    with nh.run(Model("a + b").executor()):
        result = nh.map(function, range(7), range(7), progress=False)
    assert result.usage.requests == 7
    assert result.usage.total_tokens > 0


# --- arguments -----------------------------------------------------------------------------------------


def test_concurrency_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match=r"`concurrency` must be a whole number of at least 1, got 0"):
        nh.map(add, [1], [1], concurrency=0)


def test_on_error_must_be_raise_or_collect() -> None:
    with pytest.raises(ValueError, match=r"`on_error` must be \"raise\" or \"collect\", got 'ignore'"):
        nh.map(add, [1], [1], on_error="ignore")  # type: ignore[arg-type]
