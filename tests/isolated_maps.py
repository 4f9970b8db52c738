"""Helpers for the tests of isolated maps forked in waves: a model that makes a map's items reach their
model's code at once, and what a test must find gone afterwards (processes below it, temporary folders)."""

from __future__ import annotations

import asyncio
import glob
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import nighthawk as nh
from nighthawk.testing import CallbackExecutor, StepResponse, return_outcome

ITEMS = 6
SEEN: list[str] = []
"""A list of `review`'s module, for the model's code to change in place."""


@nh.natural_function
def review(text: str) -> str:
    """natural
    Read the review <text> and return its verdict.
    """


def together(
    evaluate: Callable[[str], list[str]], outcome: Callable[[str], str], *, items: int = ITEMS
) -> Callable[..., Awaitable[StepResponse]]:
    """A model whose first answers wait until `items` steps have asked: they then reach their model's code
    at once, as a map's items do when the kernel is busy."""
    asked: list[str] = []

    async def respond(_: str, step_locals: object) -> StepResponse:
        text = step_locals["text"]  # type: ignore[index]
        asked.append(text)
        while len(asked) < items:
            await asyncio.sleep(0.01)
        return StepResponse(evaluate=evaluate(text), outcome=return_outcome(outcome(text)))

    return respond


def texts(tag: str) -> list[str]:
    """The items of one test's map (a map remembers the items it ran: each test maps its own)."""
    return [f"{tag} {n}" for n in range(ITEMS)]


def run_map(tag: str, respond: Callable[..., Awaitable[StepResponse]]) -> nh.batch.MapResult:
    with nh.run(CallbackExecutor(respond)):
        return nh.map(review, texts(tag), isolated=True, concurrency=ITEMS, on_error="collect", progress=False)


def descendants() -> set[int]:
    """Every process below this one (zombies included)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        try:
            stat = Path("/proc", entry, "stat").read_text() if entry.isdigit() else ""
        except OSError:
            continue
        if stat:
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def folders() -> set[str]:
    """The isolated steps' temporary folders there are now."""
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "nighthawk-isolated-*")))


@pytest.fixture
def nothing_left() -> Iterator[None]:
    """After the test, every process it started below this one is gone, and every temporary folder."""
    before, folders_before = descendants(), folders()
    yield
    deadline = time.monotonic() + 60
    while (descendants() - before or folders() - folders_before) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert descendants() <= before
    assert folders() <= folders_before


@contextmanager
def counting_forks() -> Iterator[list[int]]:
    """The forks this process makes inside the block (a wave's own forks, in the wave, are not counted)."""
    made: list[int] = []
    fork = os.fork

    def counting() -> int:
        pid = fork()
        if pid:
            made.append(pid)
        return pid

    os.fork = counting
    try:
        yield made
    finally:
        os.fork = fork


@pytest.fixture
def kernel_forks() -> Iterator[list[int]]:
    """The forks this process makes during the test."""
    with counting_forks() as made:
        yield made
