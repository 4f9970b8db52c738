"""A map's isolated items that reach the model's code at the same moment share one fork of the kernel (a
wave, which forks each item's walled worker): each item is still walled apart, runs in its own step's
context, sees its own values, ends with its own error, and leaves no process and no folder behind."""

from __future__ import annotations

import sys
import threading

import pytest

import nighthawk as nh
from isolated_maps import ITEMS, SEEN, folders, kernel_forks, nothing_left, review, run_map, texts, together
from nighthawk.testing import CallbackExecutor

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only"),
    pytest.mark.usefixtures("nothing_left"),
]
__all__ = ["kernel_forks", "nothing_left"]  # fixtures, used by name


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


def test_each_item_of_a_wave_runs_in_its_own_steps_context(kernel_forks: list[int]) -> None:
    # A nested natural function, the tools, the budgets: all read the step from the context.
    current = "__import__('nighthawk').get_current_step_context().step_locals['text']"
    result = run_map("context", together(lambda _: [], lambda _: f"text + ' | ' + {current}"))
    assert list(result) == [f"{text} | {text}" for text in texts("context")]
    assert len(kernel_forks) < ITEMS


def test_steps_served_by_different_threads_are_each_forked_for_their_own_thread() -> None:
    # A child dies with the thread that forked it: a wave never mixes the steps of two threads.
    executor = CallbackExecutor(together(lambda _: [], lambda _: "text", items=4))
    results: dict[str, object] = {}

    def step(text: str) -> None:
        with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
            try:
                results[text] = review(text)
            except Exception as exc:  # noqa: BLE001 - reported below
                results[text] = exc

    threads = [threading.Thread(target=step, args=(f"thread {n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {f"thread {n}": f"thread {n}" for n in range(4)}


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


def test_a_wave_removes_each_items_folder_when_its_worker_ends_not_when_the_wave_does(kernel_forks: list[int]) -> None:
    # Two items outlive the others, so that one wave holds a long-running item whatever was forked alone; the
    # last counts the folders made since the map began, but its own, once the quick items have long ended:
    # the other long one's only.
    before = sorted(folders())
    others = (
        "(__import__('time').sleep(3), len([f for f in __import__('glob').glob(__import__('os').path.join("
        "__import__('os').path.dirname(__import__('tempfile').gettempdir()), 'nighthawk-isolated-*')) "
        f"if f != __import__('tempfile').gettempdir() and f not in {before!r}]))[1]"
    )
    outcomes = {f"folders {ITEMS - 1}": f"str({others})", f"folders {ITEMS - 2}": "(__import__('time').sleep(5), text)[1]"}
    result = run_map("folders", together(lambda _: [], lambda text: outcomes.get(text, "text.upper()")))
    assert result[ITEMS - 1] == "1"
    assert len(kernel_forks) < ITEMS
