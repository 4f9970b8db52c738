"""A map given an `Opening` (a batch map, until the provider has taken one of its batches) runs one item at a
time until it opens, then as many as it may; opening it from the loop wakes the waiting driver."""

from __future__ import annotations

import asyncio

import pytest

from nighthawk.batch.driver import Opening, drive

pytestmark = pytest.mark.timeout(60)


def run_items(count: int, opening: Opening, opens_at: int) -> list[int]:
    """Drive `count` async items, the item `opens_at` opening `opening`; how many were running as each began."""
    running = 0
    seen: list[int] = []
    later: list[asyncio.Event] = []

    async def item(index: int) -> None:
        nonlocal running
        if not later:
            later.append(asyncio.Event())  # made on the background loop
        running += 1
        seen.append(running)
        if index > opens_at:
            later[0].set()
        if index == opens_at:
            opening.open()  # on the background loop, as the batch collector does
            await later[0].wait()  # as a first request waits on its batch: no landing wakes the driver
        await asyncio.sleep(0.05)
        running -= 1

    # No `tick`: the driver waits on its queue without a timeout, so only the opening's wake-up starts the rest.
    drive(item, ((index, (index,)) for index in range(count)), concurrency=count, settle=lambda *_: None, opening=opening)
    return seen


def test_a_map_runs_one_item_at_a_time_until_its_opening_opens():
    seen = run_items(10, Opening(), opens_at=3)

    assert seen[:4] == [1, 1, 1, 1]


def test_once_open_the_map_starts_the_other_items_together():
    seen = run_items(10, Opening(), opens_at=3)

    assert len(seen) == 10 and max(seen[4:]) > 2


def test_an_open_opening_holds_nothing():
    opening = Opening()
    opening.open()

    assert max(run_items(10, opening, opens_at=-1)) > 2


def test_a_rate_limit_while_the_map_is_held_does_not_shrink_it_after_it_opens():
    opening = Opening()
    running = 0
    seen: list[int] = []

    async def item(index: int) -> None:
        nonlocal running
        running += 1
        seen.append(running)
        await asyncio.sleep(0.02)
        running -= 1

    def settle(index, args, attempt, value, error, spent):
        if index == 0 and attempt == 0:
            return 0.01  # the provider asked to slow down: run it again after that
        if index == 0:
            opening.open()
        return None

    drive(item, ((index, (index,)) for index in range(40)), concurrency=40, settle=settle, opening=opening)

    assert seen[:2] == [1, 1] and max(seen) > 20
