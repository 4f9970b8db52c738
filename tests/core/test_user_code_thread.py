"""User code of a sync block runs on the calling thread, and nothing it raises can wedge the runtime.

A sync natural function's conversation runs on nighthawk's background loop, but the expressions, tools,
return values and sync scripted models it runs are the user's Python: they run on the thread that called the
function, which waits for the step and serves it. `SystemExit`, `GeneratorExit`, `CancelledError` (and a
`KeyboardInterrupt` raised off the main thread) end the step with `StepAbortedError`; the next call works.
"""

from __future__ import annotations

import asyncio  # noqa: F401 - named in expressions the scripted model sends
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.prompting import _tokens


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")


def returning(expression: str) -> nh.AgentStepExecutor:
    """An executor whose model ends every step with `return <expression>`."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": expression})])

    return executor_for(model)


def evaluating(expression: str) -> nh.AgentStepExecutor:
    """An executor whose model calls `nh_eval(expression)` once, then returns 'done'."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": expression})])
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "'done'"})])

    return executor_for(model)


def executor_for(model: Callable[..., ModelResponse]) -> nh.AgentStepExecutor:
    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(model)))


@nh.natural_function
def answer() -> object:
    """natural
    Answer.
    """


evaluations: list[str] = []


def counted(value: int) -> int:
    evaluations.append(threading.current_thread().name)
    return value


def raise_it(exception: BaseException) -> None:
    raise exception


def in_worker(function: Callable[..., object], *args: object) -> object:
    """Call `function` on a daemon thread and return its result; a call that hangs fails the test instead of
    hanging the suite (the runtime of the base commit deadlocks in some of these cases)."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), f"{function.__name__} did not finish within 60 s"
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]


# --- where user code runs ---------------------------------------------------------------------------------


def test_return_expression_runs_on_the_calling_thread():
    with nh.run(returning("threading.current_thread().name")):
        assert answer() == threading.main_thread().name


def test_sync_scripted_model_runs_on_the_calling_thread():
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(threading.current_thread().name)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "1"})])

    with nh.run(executor_for(model)):
        answer()
    assert seen == [threading.main_thread().name]


def test_return_expression_is_evaluated_once():
    evaluations.clear()
    with nh.run(returning("counted(7)")):
        assert answer() == 7
    assert evaluations == [threading.main_thread().name]


class ThreadBound:
    """A value whose `repr` notes the thread it was called on (as a thread-bound object would care)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __repr__(self) -> str:
        self.seen.add(threading.current_thread().name)
        return "ThreadBound()"


@nh.natural_function
def look_at(value: ThreadBound) -> object:
    """natural
    Look at <value> and answer.
    """


def test_values_are_rendered_for_prompts_and_tool_results_on_the_calling_thread():
    value = ThreadBound()
    with nh.run(evaluating("value")):
        look_at(value)
    assert value.seen == {threading.main_thread().name}


def test_values_are_previewed_for_event_listeners_on_the_calling_thread():
    from nighthawk import events

    value = ThreadBound()
    received: list[object] = []
    events.add_process_listener(received.append)  # a notebook's step display listens like this
    try:
        with nh.run(evaluating("value")):
            look_at(value)
    finally:
        events.remove_process_listener(received.append)
    assert received
    assert value.seen == {threading.main_thread().name}


# --- escapes from user code end the step, not the runtime -------------------------------------------------


@pytest.mark.parametrize("escape", ["SystemExit(3)", "GeneratorExit()", "asyncio.CancelledError()"])
def test_escape_raised_by_an_expression_ends_the_step(escape: str):
    with nh.run(evaluating(f"raise_it({escape})")):
        with pytest.raises(nh.StepAbortedError, match=r"user code run by the step raised \w+.*: the step was stopped"):
            answer()


def test_system_exit_in_a_return_expression_ends_the_step():
    with nh.run(returning("raise_it(SystemExit(0))")):
        with pytest.raises(nh.StepAbortedError, match=r"raised SystemExit\(0\)"):
            answer()


def test_keyboard_interrupt_raised_by_an_expression_off_the_main_thread_ends_the_step():
    with pytest.raises(nh.StepAbortedError, match=r"raised KeyboardInterrupt"):
        in_worker(_run_with, evaluating("raise_it(KeyboardInterrupt())"), answer)


def test_calls_after_an_expression_raised_system_exit_all_work():
    with nh.run(evaluating("raise_it(SystemExit(0))")), pytest.raises(nh.StepAbortedError):
        answer()
    assert in_worker(_twenty_answers) == list(range(20))


def _twenty_answers() -> list[object]:
    with nh.run(returning("index")):
        return [_answer_with(index) for index in range(20)]


@nh.natural_function
def _answer_with(index: int) -> object:
    """natural
    Answer with <index>.
    """


# --- threads --------------------------------------------------------------------------------------------


def test_thread_started_inside_run_fails_at_once_saying_how_to_pass_the_executor():
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            answer()
        except nh.NighthawkError as exc:
            errors.append(exc)

    with nh.run(returning("1")):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(timeout=20)
    assert len(errors) == 1
    assert "`nighthawk.run(...)` is open in another thread" in str(errors[0])
    assert "contextvars.copy_context().run" in str(errors[0])


def test_thread_started_in_a_copy_of_the_context_uses_the_run_executor():
    with nh.run(returning("threading.current_thread().name")), ThreadPoolExecutor(1, thread_name_prefix="w") as pool:
        name = pool.submit(contextvars.copy_context().run, answer).result(timeout=20)
    assert name.startswith("w")


def spread(count: int) -> list[object]:
    """Answer `count` natural functions on worker threads, which start with an empty context (own runs)."""
    with ThreadPoolExecutor(count, thread_name_prefix="fan") as pool:
        return list(pool.map(lambda _: _run_with(returning("threading.current_thread().name"), answer), range(count)))


def test_natural_functions_fanned_out_to_worker_threads_from_a_step_finish():
    result = in_worker(_run_with, returning("spread(3)"), answer)
    assert sorted(name[:3] for name in result) == ["fan", "fan", "fan"]


def _run_with(executor: nh.StepExecutor, function: Callable[[], object]) -> object:
    with nh.run(executor):
        return function()


# --- model values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [123, None, ["openai-responses:gpt-5.4-nano"]], ids=["int", "none", "list"])
def test_configuration_refuses_a_model_that_is_not_a_model(model: object):
    with pytest.raises(TypeError, match=r"`model` must be a `provider:model` string such as .* or a pydantic-ai `Model` instance, got"):
        nh.StepExecutorConfiguration(model=model)


def test_configuration_refuses_a_model_string_without_a_model_name():
    with pytest.raises(ValueError, match=r"`model` must be a `provider:model` string"):
        nh.StepExecutorConfiguration(model="openai:")
