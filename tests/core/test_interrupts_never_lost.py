"""Ctrl-C while a map or a step waits on the main thread is never lost (`nighthawk.threads._interrupts`).

Python's own handler raises `KeyboardInterrupt` wherever the main thread is; inside a `__del__` or a weakref
callback Python prints it and drops it, and the map ran on. Each test here delivers a real SIGINT from inside
such a callback (`signal.raise_signal` runs the handler there and then), run on the main thread while a map
or a step is waiting, and checks that the waiter stops and raises.
"""

from __future__ import annotations

import asyncio
import signal
import weakref
from collections.abc import Iterator

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.threads._interrupts import taking_interrupts
from scripting import finish, scripted_executor

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(120)]

ITEMS = [f"ticket {n}" for n in range(200)]


class InterruptWhenCollected:
    """An object whose `__del__` sends this process a SIGINT, as Ctrl-C would, while it is being collected."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


def interrupt_from_del(text: str) -> None:
    """On the fifth ticket, SIGINT arrives while Python runs a `__del__`."""
    if text == "ticket 5":
        InterruptWhenCollected()  # dropped at once: its `__del__` runs here


def interrupt_from_weakref_callback(text: str) -> str:
    """On the fifth ticket, SIGINT arrives while Python runs a weakref callback."""
    if text == "ticket 5":
        target = InterruptWhenCollected.__new__(type("Target", (), {}))
        weakref.finalize(target, signal.raise_signal, signal.SIGINT)
        del target
    return text.upper()


@nh.natural_function
def shout(text: str) -> str:
    interrupt_from_del(text)
    """natural
    Shout <text>.
    """


@nh.natural_function
def shout_back(text: str) -> str:
    """natural
    Shout <text> back.
    """


class Model:
    """An async scripted model that returns `expression` after a short wait; counts its requests."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.requests = 0

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        await asyncio.sleep(0.01)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": self.expression})])

    def executor(self) -> nh.AgentStepExecutor:
        return nh.AgentStepExecutor.from_configuration(
            configuration=nh.StepExecutorConfiguration(model=FunctionModel(self, model_name="scripted"))
        )


@pytest.fixture(autouse=True)
def python_handler() -> Iterator[None]:
    """Python's own SIGINT handler, as in a terminal or a kernel's cell, and back to what it was afterwards."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


# Raised where it lands (the map's function is user code), Python drops it and says so; the map still stops.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_inside_a_del_stops_the_map() -> None:
    model = Model("text.upper()")
    with nh.run(model.executor()), pytest.raises(KeyboardInterrupt):
        nh.map(shout, ITEMS, concurrency=4)
    assert model.requests < len(ITEMS)


# In user code the interrupt is raised where it lands, as Python does (Python drops this one and says so).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_inside_a_weakref_callback_run_by_user_code_stops_the_map() -> None:
    model = Model("interrupt_from_weakref_callback(text)")
    with nh.run(model.executor()), pytest.raises(KeyboardInterrupt):
        nh.map(shout_back, ITEMS, concurrency=4)
    assert model.requests < len(ITEMS)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_inside_a_weakref_callback_stops_a_step() -> None:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        interrupt_from_weakref_callback("ticket 5")  # a sync scripted model runs on the step's calling thread
        return ModelResponse(parts=[finish("return", return_expression="'done'")])

    executor = nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model=FunctionModel(answer, model_name="scripted"))
    )
    with nh.run(executor), pytest.raises(KeyboardInterrupt):
        shout_back("hello")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_users_own_handler_is_called_and_what_it_raises_stops_the_map() -> None:
    class Stop(Exception):
        pass

    calls: list[int] = []

    def mine(signum: int, frame: object) -> None:
        calls.append(signum)
        raise Stop("stopped by my handler")

    signal.signal(signal.SIGINT, mine)
    model = Model("text.upper()")
    with nh.run(model.executor()), pytest.raises(Stop, match="stopped by my handler"):
        nh.map(shout, ITEMS, concurrency=4)
    assert calls == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is mine


def test_a_users_handler_that_does_not_raise_lets_the_map_finish() -> None:
    calls: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    model = Model("text.upper()")
    with nh.run(model.executor()):
        answers = nh.map(shout, ITEMS[:10], concurrency=4)
    assert list(answers) == [text.upper() for text in ITEMS[:10]]
    assert calls == [signal.SIGINT]


def test_an_interrupt_inside_a_del_run_by_the_waiters_own_code_is_kept_for_it() -> None:
    woken: list[bool] = []
    with taking_interrupts(lambda: woken.append(True)) as interrupts:
        InterruptWhenCollected()  # its `__del__` runs here, in the waiter's code: nothing is raised in it
        assert woken == [True]
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()


def test_a_second_interrupt_raises_at_once() -> None:
    with taking_interrupts(lambda: None) as interrupts:
        signal.raise_signal(signal.SIGINT)  # taken: raised by `check`, where the waiter looks
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()


def test_an_interrupt_is_raised_once() -> None:
    with taking_interrupts(lambda: None) as interrupts:
        signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()
        interrupts.check()


def test_an_ignored_interrupt_stays_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with taking_interrupts(lambda: None) as interrupts:
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        signal.raise_signal(signal.SIGINT)
        interrupts.check()

