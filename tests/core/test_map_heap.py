"""While a map runs, the objects that existed before it are left out of the collector's full passes.

A full pass walks every tracked object of the process; with a map's items holding their conversations across
the model's latency, such passes came every few hundred items and stopped every item in flight for the
length of a walk over the whole heap (see `nighthawk.batch.heap`). These tests check what the map does to
the collector, and that it gives everything back: nothing stays frozen, garbage from before is still
collected, a heap that somebody else froze stays frozen.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh


pytestmark = pytest.mark.usefixtures("fresh_session_store")


async def returns_its_number(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    await asyncio.sleep(0.001)
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "n"})])


@nh.natural_function
def number(n: int) -> int:
    """natural
    Return <n>.
    """


@pytest.fixture
def scripted() -> Iterator[None]:
    executor = nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model=FunctionModel(returns_its_number))
    )
    with nh.run(executor):
        yield


@pytest.fixture(autouse=True)
def unfrozen_heap() -> Iterator[None]:
    """Each test starts with nothing frozen and leaves nothing frozen, whatever it did."""
    gc.unfreeze()
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


class Cycle:
    def __init__(self) -> None:
        self.me = self


def freeze_count_during_an_item(_: object) -> int:
    return gc.get_freeze_count()


def test_objects_made_before_a_map_are_frozen_while_its_items_run() -> None:
    before = len(gc.get_objects())

    counts = nh.map(freeze_count_during_an_item, [1, 2, 3], concurrency=2, progress=False)

    assert min(counts) >= before * 0.9  # what existed when the map started (less what died since)


def test_the_heap_is_handed_back_when_the_map_ends() -> None:
    nh.map(freeze_count_during_an_item, [1, 2, 3], progress=False)

    assert gc.get_freeze_count() == 0


def test_the_heap_is_handed_back_when_an_item_fails() -> None:
    def fails(_: object) -> None:
        raise ValueError("item failed")

    with pytest.raises(nh.MapItemError):
        nh.map(fails, [1], progress=False)

    assert gc.get_freeze_count() == 0


def test_the_heap_is_handed_back_after_an_interrupt() -> None:
    def interrupted(_: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nh.map(interrupted, [1], progress=False)

    assert gc.get_freeze_count() == 0


def test_garbage_from_before_the_map_is_collected_after_it() -> None:
    cycle = Cycle()
    gone = weakref.ref(cycle)
    del cycle

    nh.map(freeze_count_during_an_item, [1], progress=False)
    gc.collect()

    assert gone() is None


def test_garbage_an_item_makes_is_collected_while_the_map_runs() -> None:
    def makes_and_collects_a_cycle(_: object) -> bool:
        cycle = Cycle()
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        return gone() is None

    assert nh.map(makes_and_collects_a_cycle, [1, 2], progress=False) == [True, True]


def test_a_heap_somebody_else_froze_stays_frozen_after_the_map() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()

    nh.map(freeze_count_during_an_item, [1], progress=False)

    assert gc.get_freeze_count() >= frozen * 0.9  # still frozen (less the frozen objects that died meanwhile)


def test_a_map_leaves_the_collector_alone_when_it_is_disabled() -> None:
    gc.disable()

    counts = nh.map(freeze_count_during_an_item, [1], progress=False)

    assert counts == [0]


def test_a_map_nested_in_an_item_leaves_the_heap_set_aside_for_the_outer_map() -> None:
    def runs_a_map_then_looks(_: object) -> int:
        nh.map(freeze_count_during_an_item, [1, 2], progress=False)
        return gc.get_freeze_count()

    counts = nh.map(runs_a_map_then_looks, [1], progress=False)

    assert counts[0] > 0
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("scripted")
def test_a_natural_function_mapped_gives_the_heap_back() -> None:
    assert nh.map(number, range(20), concurrency=8, progress=False) == list(range(20))
    assert gc.get_freeze_count() == 0
