"""A map's isolated items that reach the model's code at the same moment share one fork of the kernel (a
wave, which forks each item's walled worker): each item is still walled apart, sees its own values, ends
with its own error, and leaves no process and no folder behind."""

from __future__ import annotations

import asyncio
import glob
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

import nighthawk as nh
from nighthawk.testing import CallbackExecutor, StepResponse, return_outcome

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")

ITEMS = 6
SEEN: list[str] = []


@nh.natural_function
def review(text: str) -> str:
    """natural
    Read the review <text> and return its verdict.
    """


def together(evaluate: Callable[[str], list[str]], outcome: Callable[[str], str]) -> Callable[..., Awaitable[StepResponse]]:
    """A model whose first answers wait until every item has asked: the items then reach their model's code
    at once, as a map's items do when the kernel's thread is busy."""
    asked: list[str] = []

    async def respond(_: str, step_locals: object) -> StepResponse:
        text = step_locals["text"]  # type: ignore[index]
        asked.append(text)
        while len(asked) < ITEMS:
            await asyncio.sleep(0.01)
        return StepResponse(evaluate=evaluate(text), outcome=return_outcome(outcome(text)))

    return respond


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
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "nighthawk-isolated-*")))


@pytest.fixture(autouse=True)
def nothing_left() -> Iterator[None]:
    before, folders_before = descendants(), folders()
    yield
    deadline = time.monotonic() + 60
    while (descendants() - before or folders() - folders_before) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert descendants() <= before
    assert folders() <= folders_before


@pytest.fixture
def kernel_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The forks this process makes (a wave's own forks, in the wave, are not counted)."""
    made: list[int] = []
    fork = os.fork

    def counting() -> int:
        pid = fork()
        if pid:
            made.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting)
    return made


def texts(tag: str) -> list[str]:
    """The items of one test's map (a map remembers the items it ran: each test maps its own)."""
    return [f"{tag} {n}" for n in range(ITEMS)]


def run_map(tag: str, respond: Callable[..., Awaitable[StepResponse]]) -> nh.batch.MapResult:
    with nh.run(CallbackExecutor(respond)):
        return nh.map(review, texts(tag), isolated=True, concurrency=ITEMS, on_error="collect", progress=False)


def test_items_that_reach_the_models_code_together_share_a_fork_of_the_kernel(kernel_forks: list[int]) -> None:
    result = run_map("shared", together(lambda _: [], lambda _: "text.upper()"))
    assert list(result) == [text.upper() for text in texts("shared")]
    assert 1 <= len(kernel_forks) < ITEMS


def test_each_item_of_a_wave_has_a_walled_worker_of_its_own(kernel_forks: list[int]) -> None:
    # Each worker sees the namespace as the wave found it: an item's in-place change reaches no other.
    result = run_map("own", together(lambda _: ["SEEN.append(text)"], lambda _: "f'{len(SEEN)} {__import__(\"os\").getpid()}'"))
    assert not SEEN  # the appends stayed in the children
    assert list(result) == ["1 1"] * ITEMS  # each saw its own append only, as the first process of its namespace
    assert len(kernel_forks) < ITEMS


def test_an_item_whose_worker_exits_fails_alone_and_says_how(kernel_forks: list[int]) -> None:
    result = run_map("exits", together(lambda text: ["__import__('os')._exit(3)" if text == "exits 2" else "0"], lambda _: "text"))
    assert [value for n, value in enumerate(result) if n != 2] == [text for n, text in enumerate(texts("exits")) if n != 2]
    assert isinstance(result.errors[2], nh.errors.IsolationError)
    assert "exited with status 3" in str(result.errors[2])
    assert len(kernel_forks) < ITEMS


def test_an_item_whose_worker_crashes_says_it_crashed(kernel_forks: list[int]) -> None:
    result = run_map("crashes", together(lambda text: ["__import__('ctypes').string_at(0)" if text == "crashes 4" else "0"], lambda _: "text"))
    assert "crashed (SIGSEGV)" in str(result.errors[4])
    assert len([value for value in result if value is not None]) == ITEMS - 1
    assert len(kernel_forks) < ITEMS


def test_an_item_of_a_wave_whose_step_ends_has_its_worker_and_everything_it_started_killed(kernel_forks: list[int]) -> None:
    # The item's step ends (its answer refused) while its worker, and a process the worker started, still run.
    hang = "__import__('subprocess').Popen(['sleep', '600']) and 0"
    result = run_map("ends", together(lambda text: [hang] if text == "ends 1" else ["0"], lambda text: "undefined_name" if text == "ends 1" else "text"))
    assert result.errors[1] is not None
    assert len([value for value in result if value is not None]) == ITEMS - 1
    assert len(kernel_forks) < ITEMS
