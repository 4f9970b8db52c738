"""What a front end readies at the process's first run instead of at load (core/nighthawk/_first_use.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import nighthawk as nh
from nighthawk import _first_use


@pytest.fixture(autouse=True)
def _nothing_pending() -> Iterator[None]:
    yield
    _first_use._pending.clear()


def test_the_first_executor_lookup_installs_what_a_front_end_waited_to_install(scripted) -> None:
    executor, _ = scripted()
    _first_use.prepare_on_first_use(lambda: nh.set_default_step_executor(executor))
    assert nh.get_step_executor() is executor


def test_a_preparation_runs_once(scripted) -> None:
    executor, _ = scripted()
    calls: list[int] = []

    def prepare() -> None:
        calls.append(1)
        nh.set_default_step_executor(executor)

    _first_use.prepare_on_first_use(prepare)
    _first_use.prepare_on_first_use(prepare)
    nh.get_step_executor()
    with nh.scope():
        nh.get_step_executor()
    assert calls == [1]


def test_an_interrupted_preparation_is_tried_again_at_the_next_use(scripted) -> None:
    executor, _ = scripted()
    attempts: list[int] = []

    def prepare() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise KeyboardInterrupt
        nh.set_default_step_executor(executor)

    _first_use.prepare_on_first_use(prepare)
    with pytest.raises(KeyboardInterrupt):
        nh.get_step_executor()
    assert nh.get_step_executor() is executor
    assert len(attempts) == 2


def test_a_preparation_that_looks_up_the_executor_itself_does_not_recurse(scripted) -> None:
    executor, _ = scripted()

    def prepare() -> None:
        nh.set_default_step_executor(executor)
        assert nh.get_step_executor() is executor

    _first_use.prepare_on_first_use(prepare)
    assert nh.get_step_executor() is executor


def test_a_forgotten_preparation_never_runs() -> None:
    ran: list[int] = []
    _first_use.prepare_on_first_use(lambda: ran.append(1))
    _first_use.forget_preparation(_first_use._pending[0])
    with pytest.raises(nh.NighthawkError, match="no step executor is set"):
        nh.get_step_executor()
    assert ran == []


def test_a_run_readies_the_front_end_before_its_first_event(scripted) -> None:
    executor, _ = scripted()
    seen: list[object] = []
    _first_use.prepare_on_first_use(lambda: nh.events.add_process_listener(seen.append))
    try:
        with nh.run(executor):
            pass
    finally:
        nh.events.remove_process_listener(seen.append)
    assert type(seen[0]).__name__ == "RunStarted"
