"""While maps run, the heap they found is left out of the full collections, and handed back when they end.

A full pass walks every tracked object of the process; with a map's items holding their conversations across
the model's latency, such passes came every few hundred items and stopped every item in flight for the
length of a walk over the whole heap (see `nighthawk.batch.heap`). A map sets the heap aside at its start if
a full pass ran since the heap was last handed back, otherwise after the first full pass it meets. These
tests check what the map does to the collector, and that it gives everything back: a short map right after
another changes nothing, nothing stays frozen, garbage is still collected, a heap that somebody else froze
stays frozen.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import threading
import weakref
from collections.abc import Iterator

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.batch import heap
from support.background_loop import after_the_loop_ran_what_it_had_queued


pytestmark = pytest.mark.usefixtures("fresh_session_store")


@pytest.fixture(autouse=True)
def unfrozen_heap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with nothing frozen, as if a map had just handed the heap back, and leaves nothing
    frozen, whatever it did."""
    gc.unfreeze()
    monkeypatch.setattr(heap, "_passes_at_hand_back", heap._full_passes())
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def unsized(count: int, start: int = 0) -> Iterator[int]:
    """Items of a map whose length is not known (a generator)."""
    return iter(range(start, start + count))


class Cycle:
    def __init__(self) -> None:
        self.me = self


def frozen_during_the_item(_: object) -> int:
    return gc.get_freeze_count()


def collects_then_looks(index: int) -> int:
    """Item 0 makes the full pass a long map would meet; every item answers how much is frozen."""
    if index == 0:
        gc.collect()
    return gc.get_freeze_count()


def test_a_map_that_meets_no_full_collection_freezes_nothing() -> None:
    assert nh.map(frozen_during_the_item, unsized(5), concurrency=1, progress=False) == [0] * 5


def test_a_map_starts_with_the_heap_set_aside_when_a_full_collection_ran_since_the_last_map() -> None:
    gc.collect()

    counts = nh.map(frozen_during_the_item, unsized(3), concurrency=1, progress=False)

    assert min(counts) > 1000
    assert gc.get_freeze_count() == 0


def test_a_map_right_after_one_that_set_the_heap_aside_waits_for_a_full_collection() -> None:
    # A freeze starts the collector's counts over: freezing at every map's start, a program of many small
    # maps would never make a full pass again (see the next test).
    gc.collect()
    first = nh.map(frozen_during_the_item, unsized(3), concurrency=1, progress=False)

    second = nh.map(frozen_during_the_item, unsized(5, start=10), concurrency=1, progress=False)  # other items, none reused

    assert min(first) > 1000
    assert second == [0] * 5


def test_a_short_map_leaves_the_collector_alone() -> None:
    gc.collect()

    assert nh.map(frozen_during_the_item, range(3), concurrency=1, progress=False) == [0, 0, 0]


def test_a_trial_run_on_a_few_items_leaves_the_real_map_the_heap_set_aside_from_its_start() -> None:
    gc.collect()
    nh.map(frozen_during_the_item, range(3), concurrency=1, progress=False)  # the user tries three rows first

    counts = nh.map(frozen_during_the_item, range(10, 10 + heap.SHORT_MAP_ITEMS), concurrency=8, progress=False)  # none reused

    assert min(counts) > 1000
    assert gc.get_freeze_count() == 0


def test_a_program_of_many_small_maps_still_gets_full_collections() -> None:
    full_passes = []

    def count(phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            full_passes.append(gc.get_freeze_count())

    kept = []
    gc.callbacks.append(count)
    try:
        for n in range(200):
            kept.extend([n] for _ in range(3000))  # objects that survive, as a program's data does
            nh.map(frozen_during_the_item, iter([2 * n, 2 * n + 1]), concurrency=1, progress=False)
    finally:
        gc.callbacks.remove(count)

    assert 0 in full_passes  # at least one full pass over the whole heap


def test_after_a_full_collection_the_rest_of_the_map_runs_with_the_heap_set_aside() -> None:
    counts = nh.map(collects_then_looks, unsized(3), concurrency=1, progress=False)

    assert counts[0] == 0
    assert counts[1] > 1000 and counts[2] > 1000  # the heap of a process with pydantic-ai loaded


kept_alive: list[object] = []


def grows_and_collects(index: int) -> int:
    """Items 0 and 2 make a full pass; item 1 makes objects that live as long as the map (its items in flight)."""
    if index == 1:
        kept_alive.extend([[n]] for n in range(50_000))
    if index in (0, 2):
        gc.collect()
    return gc.get_freeze_count()


def test_what_the_map_itself_keeps_across_a_full_collection_is_set_aside_too() -> None:
    counts = nh.map(grows_and_collects, unsized(4), concurrency=1, progress=False)  # a long map, as far as it knows
    kept_alive.clear()

    assert counts[3] >= counts[1] + 50_000, counts  # the next full passes of the map do not walk them again


def test_the_heap_is_handed_back_when_the_map_ends() -> None:
    nh.map(collects_then_looks, unsized(3), concurrency=1, progress=False)

    assert gc.get_freeze_count() == 0


def test_the_heap_is_handed_back_when_an_item_fails() -> None:
    def fails_after_the_first(index: int) -> int:
        if index == 1:
            raise ValueError("item failed")
        return collects_then_looks(index)

    with pytest.raises(nh.MapItemError):
        nh.map(fails_after_the_first, unsized(3), concurrency=1, progress=False)

    assert gc.get_freeze_count() == 0


def test_the_heap_is_handed_back_after_an_interrupt() -> None:
    def interrupted_after_the_first(index: int) -> int:
        if index == 1:
            raise KeyboardInterrupt
        return collects_then_looks(index)

    with pytest.raises(KeyboardInterrupt):
        nh.map(interrupted_after_the_first, unsized(3), concurrency=1, progress=False)

    assert gc.get_freeze_count() == 0


def test_an_interrupted_map_pauses_the_collector_until_its_items_have_unwound() -> None:
    unwinding = threading.Event()

    async def hangs(index: int) -> int:
        try:
            await asyncio.sleep(60)
        finally:
            unwinding.wait(30)  # holds the loop: the items are still unwinding when the interrupt is back
        return index

    def interrupt() -> None:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Timer(0.5, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            nh.map(hangs, unsized(100), concurrency=100, progress=False)
        paused = not gc.isenabled()
    finally:
        timer.join()
        unwinding.set()
    after_the_loop_ran_what_it_had_queued()  # every item's unwinding, then what their ends queued

    assert paused
    assert gc.isenabled()


def test_a_paused_collector_the_user_had_stopped_stays_stopped() -> None:
    gc.disable()
    resume = heap.pause_collection()
    resume()

    assert not gc.isenabled()


def test_the_heap_is_handed_back_when_an_item_clears_the_collector_callbacks() -> None:
    callbacks = list(gc.callbacks)

    def clears_the_callbacks(_: object) -> int:
        gc.callbacks.clear()
        return gc.get_freeze_count()

    gc.collect()  # so the map sets the heap aside at its start
    try:
        counts = nh.map(clears_the_callbacks, unsized(2), concurrency=1, progress=False)
    finally:
        gc.callbacks[:] = callbacks

    assert min(counts) > 1000
    assert gc.get_freeze_count() == 0


def test_what_dies_among_the_set_aside_objects_is_collected_after_the_map() -> None:
    kept = [Cycle()]
    gone = weakref.ref(kept[0])

    def drops_the_cycle(index: int) -> int:
        if index == 1:
            kept.clear()  # garbage now, among the objects set aside after item 0's full pass
        return collects_then_looks(index)

    counts = nh.map(drops_the_cycle, unsized(3), concurrency=1, progress=False)
    gc.collect()

    assert counts[1] > 0
    assert gone() is None


def test_garbage_an_item_makes_is_collected_while_the_map_runs() -> None:
    def makes_and_collects_a_cycle(index: int) -> bool:
        collects_then_looks(index)
        cycle = Cycle()
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        return gone() is None

    assert nh.map(makes_and_collects_a_cycle, unsized(3), concurrency=1, progress=False) == [True] * 3


def test_a_heap_somebody_else_froze_stays_frozen_after_the_map() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()

    nh.map(collects_then_looks, unsized(3), concurrency=1, progress=False)

    assert gc.get_freeze_count() >= frozen * 0.9  # still frozen (less the frozen objects that died meanwhile)


def test_a_map_leaves_the_collector_alone_when_it_is_disabled() -> None:
    gc.disable()

    assert nh.map(collects_then_looks, unsized(3), concurrency=1, progress=False) == [0, 0, 0]


def test_a_map_nested_in_an_item_leaves_the_heap_set_aside_for_the_outer_map() -> None:
    def runs_a_map_then_looks(index: int) -> int:
        if index == 1:
            nh.map(frozen_during_the_item, [1, 2], progress=False)
        return collects_then_looks(index)

    counts = nh.map(runs_a_map_then_looks, unsized(3), concurrency=1, progress=False)

    assert counts[1] > 0 and counts[2] > 0
    assert gc.get_freeze_count() == 0


async def returns_its_number(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    await asyncio.sleep(0.001)
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "collects_then_looks(n)"})])


@nh.natural_function
def number(n: int) -> int:
    """natural
    Return <n>.
    """


def test_a_natural_function_mapped_sets_the_heap_aside_and_gives_it_back() -> None:
    executor = nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model=FunctionModel(returns_its_number))
    )
    with nh.run(executor):
        counts = nh.map(number, unsized(6), concurrency=1, progress=False)

    assert counts[0] == 0 and min(counts[1:]) > 1000
    assert gc.get_freeze_count() == 0
