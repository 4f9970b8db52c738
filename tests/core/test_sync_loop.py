"""Sync natural functions on the background loop (`nighthawk.threads._loop`), as in a Jupyter kernel cell.

A kernel cell already runs inside an event loop, so a sync natural function can use neither `asyncio.run`
nor a loop of its own per call: every sync step runs on one long-lived loop in the daemon thread
`nighthawk-loop`. These tests prove that design: 50 sequential calls made from inside a running loop
against a real keep-alive provider client (the loopback server of `tests/support/openai_server.py`), the
contrast with a fresh loop per call, context variables crossing into the step, and KeyboardInterrupt
cancelling the in-flight model call before it is re-raised, with nothing committed.

The interrupt tests deliver a real SIGINT to the main thread (`signal.pthread_kill`) while it waits, as
"Interrupt kernel" does, each in a fresh interpreter (see `run_isolated`).
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.prompting import _tokens


def _load_support(name: str):
    """Import `tests/support/<name>.py` by path (the suite runs with `--import-mode=importlib`)."""
    module_name = f"_nighthawk_tests_support_{name}"
    if module_name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "support" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    return sys.modules[module_name]


openai_server = _load_support("openai_server")

CORE = Path(nh.__file__).resolve().parents[1]  # the nighthawk these tests import, for subprocesses

CALLS = 50
SLOW_MODEL_SECONDS = 6.0  # an interrupt that fails to land makes the test fail after this, not hang

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST_ID", default="unset")


def read_request_id() -> str:
    """Called by the scripted model through `nh_eval`/`nh_assign`, on the loop thread."""
    return REQUEST_ID.get()


def conversation_observer() -> nh.AgentStepExecutor:
    """An executor whose (async) model writes the thread and loop the conversation runs on into `y`."""

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return assign(repr(f"{threading.current_thread().name}/{id(asyncio.get_running_loop())}"))

    return function_executor(model)


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    # "gpt-test" maps to o200k_base, whose first use would download the vocabulary (not loopback).
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")


ONE_ROUND = openai_server.Reply(
    calls=[
        openai_server.tool_call("nh_assign", target_path="y", expression="x + 1"),
        openai_server.tool_call("nh_outcome", kind="pass"),
    ]
)
"""Every block of these tests writes `y` and finishes in one response."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A keep-alive OpenAI-compatible server on loopback answering every request with `ONE_ROUND`."""
    with (
        openai_server.NetworkRecorder() as network,
        openai_server.ScriptedOpenAIServer(lambda request: ONE_ROUND, lifetime=50.0) as scripted,
        override_allow_model_requests(True),
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield scripted
    assert ("connect", "127.0.0.1") in network.events  # the recorder does see the client's connections
    assert network.non_loopback == [], "the test reached beyond loopback"


def openai_executor(api: str = "chat") -> nh.AgentStepExecutor:
    configuration = nh.StepExecutorConfiguration(model=f"openai-{api}:gpt-test")
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


def function_executor(function: Callable[..., object]) -> nh.AgentStepExecutor:
    configuration = nh.StepExecutorConfiguration(model=FunctionModel(function))
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


def assign(expression: str, *, then_pass: bool = True) -> ModelResponse:
    parts = [ToolCallPart("nh_assign", {"target_path": "y", "expression": expression})]
    if then_pass:
        parts.append(ToolCallPart("nh_outcome", {"kind": "pass"}))
    return ModelResponse(parts=parts)


class SlowModel:
    """Writes `y = 'after'` in its first response, then sleeps in the second until cancelled."""

    def __init__(self) -> None:
        self.sleeping = threading.Event()
        self.cancelled = threading.Event()
        self.requests = 0

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        if self.requests == 1:
            return assign("'after'", then_pass=False)
        self.sleeping.set()
        try:
            await asyncio.sleep(SLOW_MODEL_SECONDS)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])


@nh.natural_function
def increment(x: int) -> int:
    y = 0
    """natural
    Set <:y> to <x> + 1.
    """
    return y


@nh.natural_function
async def increment_async(x: int) -> int:
    y = 0
    """natural
    Set <:y> to <x> + 1.
    """
    return y


@nh.natural_function
def observe() -> str:
    y = ""
    """natural
    Set <:y> to a description of where this step runs.
    """
    return y


@nh.natural_function
def write_after() -> str:
    y = "before"
    """natural
    Set <:y> to "after".
    """
    return y


@nh.natural_function
def write_or_interrupted() -> tuple[str, bool]:
    """Return the write binding as the caller sees it after the block, and whether it was interrupted."""
    y = "before"
    try:
        """natural
        Set <:y> to "after".
        """
    except KeyboardInterrupt:
        return y, True
    return y, False


# --- many calls from inside a running loop, over a kept-alive connection ---------------------------------


def test_fifty_sync_calls_from_a_running_loop_use_one_request_each_and_one_connection(server):
    async def cell() -> list[int]:
        asyncio.get_running_loop()  # like a kernel cell: a loop is running in this thread
        return [increment(i) for i in range(CALLS)]

    with nh.run(openai_executor()):
        results = asyncio.run(cell())

    assert results == [i + 1 for i in range(CALLS)]
    assert server.request_count == CALLS  # each block writes and finishes in one response
    # One executor -> one provider -> one httpx pool, used only from `nighthawk-loop`: the first request
    # opens a connection and the other 49 reuse it.
    assert server.connection_count == 1


def test_fresh_event_loop_per_call_cannot_reuse_the_connection(server):
    # The contrast, and why nighthawk keeps one loop: the reference implementation ran each sync step with
    # `asyncio.run` in a new thread. httpx connections belong to the loop that opened them, so the next call
    # cannot reuse them. Older pydantic-ai versions then failed with "Event loop is closed" (or sent the
    # request twice); pydantic-ai 2.68 notices the dead loop and builds a new HTTP client each time, so every
    # call opens a new TCP connection and leaves the previous one unclosed.
    calls = 5
    results: list[object] = []

    def reference_style_call(x: int) -> None:
        try:
            results.append(asyncio.run(increment_async(x)))
        except Exception as exc:  # reported by the assertion below
            results.append(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # the abandoned sockets of the dead loops
        with nh.run(openai_executor()):
            for i in range(calls):
                context = contextvars.copy_context()  # carries the executor, as the reference did
                worker = threading.Thread(target=context.run, args=(reference_style_call, i))
                worker.start()
                worker.join(timeout=10)
        gc.collect()

    assert results == [i + 1 for i in range(calls)]
    assert server.request_count == calls
    assert server.connection_count == calls


# --- the loop and the context --------------------------------------------------------------------------


def test_sync_steps_run_on_one_background_loop_thread():
    executor = conversation_observer()
    with nh.run(executor):
        first = observe()
        second = observe()
    assert first == second
    assert first.startswith("nighthawk-loop/")


def test_user_code_of_a_sync_step_runs_on_the_calling_thread():
    executor = function_executor(lambda messages, info: assign("threading.current_thread().name"))
    seen: list[str] = []

    def worker() -> None:
        with nh.run(executor):
            seen.append(observe())

    thread = threading.Thread(target=worker, name="the-caller")
    thread.start()
    thread.join(timeout=10)
    with nh.run(executor):
        seen.append(observe())
    assert seen == ["the-caller", threading.main_thread().name]


def test_sync_steps_called_inside_a_running_loop_use_the_same_background_loop():
    executor = conversation_observer()

    async def cell() -> str:
        return observe()

    with nh.run(executor):
        outside = observe()
        inside = asyncio.run(cell())
    assert inside == outside


def test_context_variables_set_before_a_call_are_visible_in_the_step():
    executor = function_executor(lambda messages, info: assign("read_request_id()"))

    @nh.natural_function
    def read() -> str:
        y = ""
        """natural
        Set <:y> to the current request id.
        """
        return y

    token = REQUEST_ID.set("request-42")
    try:
        with nh.run(executor):
            assert read() == "request-42"
    finally:
        REQUEST_ID.reset(token)


# --- interrupts -----------------------------------------------------------------------------------------
#
# Each interrupt scenario runs in the main thread of a fresh interpreter, where a real SIGINT arrives as it
# does in a kernel: a stray interrupt cannot abort the pytest session, and a call that never returns after
# the interrupt is reported (with the stuck thread's traceback) instead of hanging the suite.

# Seconds a scenario may take once its interpreter has imported this module. The watchdog starts only then:
# on a loaded machine, starting Python and importing nighthawk and pydantic-ai took 3 to 8 s here (measured
# with two CPU-bound processes beside it), and a watchdog counting start-up fired in the middle of a cancel
# that itself took milliseconds.
ISOLATED_TIMEOUT = 10.0
# What the interpreter may take to start and import, on top (only a bound for a start-up that never ends).
START_UP_ALLOWANCE = 60.0


def interrupt_main_thread_when(event: threading.Event) -> None:
    """Send SIGINT to the main thread once `event` is set, from a daemon thread (as "Interrupt kernel" does)."""
    main = threading.main_thread().ident
    assert main is not None

    def fire() -> None:
        # The event comes after the step's set-up, which a loaded machine slows: wait as long as the scenario
        # may last (an interrupt that never fires fails the scenario's report, not this wait).
        if event.wait(ISOLATED_TIMEOUT):
            signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=fire, name="test-interrupter", daemon=True).start()


def scenario_interrupt_cancels_the_model_call() -> dict[str, object]:
    model = SlowModel()
    interrupt_main_thread_when(model.sleeping)
    started = time.perf_counter()
    try:
        with nh.run(function_executor(model)):
            write_after()
    except KeyboardInterrupt:
        # Read at once: run_sync may re-raise only after the task was cancelled and has ended.
        return {"raised": True, "cancelled": model.cancelled.is_set(), "fast": time.perf_counter() - started < 4}
    return {"raised": False}


def scenario_interrupted_block_commits_nothing() -> dict[str, object]:
    model = SlowModel()  # its first response already writes `y = 'after'` in the step
    interrupt_main_thread_when(model.sleeping)
    with nh.run(function_executor(model)):
        y, interrupted = write_or_interrupted()
    return {"y": y, "interrupted": interrupted, "requests": model.requests}


def scenario_call_after_an_interrupt() -> dict[str, object]:
    observer = conversation_observer()
    with nh.run(observer):
        before = observe()
    model = SlowModel()
    interrupt_main_thread_when(model.sleeping)
    try:
        with nh.run(function_executor(model)):
            write_after()
    except KeyboardInterrupt:
        pass
    with nh.run(observer):
        after = observe()
    return {"thread": after.split("/")[0], "same_loop": after == before}


def scenario_interrupt_during_an_http_request() -> dict[str, object]:
    in_flight = threading.Event()

    def hang_first(request: object) -> object:
        if request.index == 0:
            in_flight.set()
            return openai_server.Hang(SLOW_MODEL_SECONDS)
        return ONE_ROUND

    with (
        openai_server.ScriptedOpenAIServer(hang_first, lifetime=ISOLATED_TIMEOUT) as server,
        override_allow_model_requests(True),
    ):
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = server.base_url, "test-key"
        interrupt_main_thread_when(in_flight)
        with nh.run(openai_executor()):
            try:
                write_after()
                raised = False
            except KeyboardInterrupt:
                raised = True
            after = increment(2)
        return {
            "raised": raised,
            "after": after,
            "requests": server.request_count,
            "connections": server.connection_count,
        }


def run_isolated(scenario: Callable[[], dict[str, object]]) -> dict[str, object]:
    """Run `scenario` (a function of this module) in a new interpreter's main thread; return its report."""
    code = "\n".join(
        [
            "import faulthandler, importlib.util, json, signal, sys",
            "signal.signal(signal.SIGINT, signal.default_int_handler)",
            f"spec = importlib.util.spec_from_file_location('nighthawk_sync_loop_scenarios', {__file__!r})",
            "module = importlib.util.module_from_spec(spec)",
            "sys.modules[spec.name] = module",
            "spec.loader.exec_module(module)",
            f"faulthandler.dump_traceback_later({ISOLATED_TIMEOUT - 2}, exit=True)",
            f"print('REPORT', json.dumps(module.{scenario.__name__}()))",
        ]
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CORE), os.environ.get("PYTHONPATH", "")])}
    try:
        completed = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            timeout=START_UP_ALLOWANCE + ISOLATED_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{scenario.__name__} did not finish in {START_UP_ALLOWANCE + ISOLATED_TIMEOUT} s\n{exc.stderr}")
    reports = [line for line in completed.stdout.splitlines() if line.startswith("REPORT ")]
    if not reports and "Timeout (" in completed.stderr:
        pytest.fail(f"{scenario.__name__} hung; where each thread was stuck:\n{completed.stderr}")
    assert reports, f"{scenario.__name__} ended without a report (exit {completed.returncode}):\n{completed.stderr}"
    return json.loads(reports[-1].removeprefix("REPORT "))


def test_interrupt_cancels_the_model_call_before_raising():
    assert run_isolated(scenario_interrupt_cancels_the_model_call) == {"raised": True, "cancelled": True, "fast": True}


def test_interrupted_block_commits_no_write_binding():
    report = run_isolated(scenario_interrupted_block_commits_nothing)
    assert report == {"y": "before", "interrupted": True, "requests": 2}


def test_call_after_an_interrupt_runs_normally_on_the_same_loop():
    assert run_isolated(scenario_call_after_an_interrupt) == {"thread": "nighthawk-loop", "same_loop": True}


def test_interrupt_during_an_http_request_leaves_the_provider_client_usable():
    # The cancelled request's connection is dropped (its answer may still be on the way); the next call
    # opens a fresh one on the same client and succeeds.
    report = run_isolated(scenario_interrupt_during_an_http_request)
    assert report == {"raised": True, "after": 3, "requests": 2, "connections": 2}
