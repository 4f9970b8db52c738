"""A Ctrl-C can land at any instruction of the map's own bookkeeping on the caller's thread; wherever it
lands, the map stops within a moment, sends nothing more and keeps what finished."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.batch import driver


pytestmark = pytest.mark.usefixtures("fresh_session_store")


@nh.natural_function
def add(a: int, b: int) -> int:
    """natural
    Return <a> plus <b>.
    """


class Counted:
    def __init__(self) -> None:
        self.requests = 0

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        await asyncio.sleep(0.01)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "a + b"})])

    def executor(self) -> nh.AgentStepExecutor:
        configuration = nh.StepExecutorConfiguration(model=FunctionModel(self, model_name="counted"))
        return nh.AgentStepExecutor.from_configuration(configuration=configuration)


@pytest.mark.timeout(30)
def test_a_ctrl_c_landing_as_an_item_lands_stops_the_map_instead_of_waiting_for_it_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    landed = driver._Driver._landed
    landings = itertools.count()

    def interrupted_on_the_fifth(self: driver._Driver, item: object, task: asyncio.Task[object]) -> None:
        if next(landings) == 4:
            raise KeyboardInterrupt  # taken off the queue, not yet handled: the item is still in flight
        landed(self, item, task)

    monkeypatch.setattr(driver._Driver, "_landed", interrupted_on_the_fifth)
    model = Counted()
    with nh.run(model.executor()), pytest.raises(KeyboardInterrupt):
        nh.map(add, range(20), range(20), concurrency=4, progress=False)
    sent = model.requests
    asyncio.run(asyncio.sleep(0.1))  # anything still running on the background loop would send now
    assert model.requests == sent
    monkeypatch.undo()
    again = Counted()
    with nh.run(again.executor()):
        result = nh.map(add, range(20), range(20), concurrency=4, progress=False)
    assert list(result) == [2 * k for k in range(20)]
    assert again.requests == 20 - 4  # the four items that finished before the interrupt are kept
