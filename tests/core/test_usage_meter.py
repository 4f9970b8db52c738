"""`nh.ExecutionRef` / `nh.get_execution_ref()` and `nh.UsageMeter` / `nh.get_current_usage_meter()`: who is
running, and what the run has spent so far, counted once with the budget groups."""

from __future__ import annotations

import threading

import pytest
from pydantic_ai.usage import RunUsage

import nighthawk as nh
from scripting import call, finish, scripted_executor


@nh.natural_function
def noop() -> None:
    """natural
    Nothing to do.
    """


@nh.natural_function
def ask(question: str) -> object:
    answer: object = None
    """natural
    Answer <question> into <:answer>.
    """
    return answer


# ExecutionRef ---------------------------------------------------------------------------------------------


def test_execution_ref_outside_a_run_raises() -> None:
    with pytest.raises(nh.NighthawkError, match="no execution context"):
        nh.get_execution_ref()


def test_execution_ref_in_a_run_has_its_ids_and_no_step() -> None:
    with nh.run(object(), run_id="run-1"):
        ref = nh.get_execution_ref()
        assert (ref.run_id, ref.scope_id, ref.step_id) == ("run-1", nh.get_execution_context().scope_id, None)


def test_a_scope_changes_the_scope_id_and_keeps_the_run_id() -> None:
    with nh.run(object()):
        outer = nh.get_execution_ref()
        with nh.scope():
            inner = nh.get_execution_ref()
    assert inner.run_id == outer.run_id
    assert inner.scope_id != outer.scope_id


def test_execution_ref_inside_a_step_names_the_step() -> None:
    def where() -> nh.ExecutionRef:
        return nh.get_execution_ref()

    executor, _ = scripted_executor([call("nh_assign", target_path="answer", expression="where()")], [finish()])
    with nh.run(executor, run_id="run-2"), nh.scope(implicit_references={"where": where}):
        ref = ask("where are we?")
    assert ref.run_id == "run-2"
    assert ref.step_id is not None and ref.step_id.startswith(__name__)


# UsageMeter -----------------------------------------------------------------------------------------------


def test_no_meter_outside_a_run_and_a_fresh_one_inside() -> None:
    assert nh.get_current_usage_meter() is None
    with nh.run(object()):
        meter = nh.get_current_usage_meter()
        assert isinstance(meter, nh.UsageMeter)
        assert meter.total_tokens == 0
    assert nh.get_current_usage_meter() is None


def test_recorded_usage_adds_up_and_a_snapshot_does_not_move() -> None:
    meter = nh.UsageMeter()
    meter.record(RunUsage(input_tokens=10, output_tokens=5))
    snapshot = meter.snapshot()
    meter.record(RunUsage(input_tokens=20, output_tokens=15))
    assert (snapshot.input_tokens, snapshot.output_tokens) == (10, 5)
    assert (meter.input_tokens, meter.output_tokens, meter.total_tokens) == (30, 20, 50)


def test_recorded_pydantic_ai_usage_brings_its_cost() -> None:
    from decimal import Decimal

    meter = nh.UsageMeter()
    meter.record(RunUsage(requests=1, input_tokens=10, output_tokens=5, cost=Decimal("0.5")))
    assert meter.cost_usd == 0.5
    assert meter.snapshot().cost == Decimal("0.5")


def test_usage_recorded_without_a_cost_leaves_the_cost_unknown_not_zero() -> None:
    meter = nh.UsageMeter()
    meter.record(RunUsage(requests=1, input_tokens=10, output_tokens=5))
    assert meter.cost_usd is None
    assert meter.totals().unpriced_requests == 1
    assert meter.snapshot().cost is None


def test_a_step_is_counted_in_the_meter_as_in_a_budget_group() -> None:
    executor, _ = scripted_executor([finish()], [finish()])
    with nh.run(executor), nh.budget() as group:
        noop()
        noop()
        meter = nh.get_current_usage_meter()
        assert meter is not None
        assert meter.requests == group.spent.requests == 2
        assert meter.total_tokens == group.spent.total_tokens > 0


def test_the_meter_is_readable_while_the_run_goes_on() -> None:
    def spent_so_far() -> int:
        meter = nh.get_current_usage_meter()
        assert meter is not None
        return meter.total_tokens

    executor, _ = scripted_executor(
        [finish()],
        [call("nh_assign", target_path="answer", expression="spent_so_far()")],
        [finish()],
    )
    with nh.run(executor), nh.scope(implicit_references={"spent_so_far": spent_so_far}):
        noop()
        after_first = nh.get_current_usage_meter().total_tokens  # type: ignore[union-attr]
        assert ask("how much?") == after_first > 0


def test_an_inner_run_has_its_own_meter_and_leaves_the_outer_one_alone() -> None:
    executor, _ = scripted_executor([finish()])
    with nh.run(executor):
        outer = nh.get_current_usage_meter()
        with nh.run(executor):
            inner = nh.get_current_usage_meter()
            noop()
        assert nh.get_current_usage_meter() is outer
    assert inner is not outer
    assert (inner.requests, outer.requests) == (1, 0)  # type: ignore[union-attr]


def test_a_scope_given_a_meter_counts_its_steps_there_only() -> None:
    executor, _ = scripted_executor([finish()])
    mine = nh.UsageMeter()
    with nh.run(executor):
        run_meter = nh.get_current_usage_meter()
        with nh.scope(usage_meter=mine):
            assert nh.get_current_usage_meter() is mine
            noop()
        assert nh.get_current_usage_meter() is run_meter
    assert (mine.requests, run_meter.requests) == (1, 0)  # type: ignore[union-attr]


def test_a_run_can_be_given_the_meter_to_count_in() -> None:
    executor, _ = scripted_executor([finish()])
    mine = nh.UsageMeter()
    with nh.run(executor, usage_meter=mine):
        noop()
    assert mine.requests == 1


def test_the_items_of_a_map_are_counted_in_the_run_meter() -> None:
    executor, _ = scripted_executor([finish()], [finish()], [finish()])

    @nh.natural_function
    def touch(x: int) -> None:
        """natural
        Look at <x>.
        """

    with nh.run(executor):
        nh.map(touch, [1, 2, 3], concurrency=1, progress=False)
        assert nh.get_current_usage_meter().requests == 3  # type: ignore[union-attr]


def test_threads_recording_at_once_lose_nothing() -> None:
    meter = nh.UsageMeter()

    def record_many() -> None:
        for _ in range(500):
            meter.record(RunUsage(input_tokens=1, output_tokens=1))

    threads = [threading.Thread(target=record_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert meter.total_tokens == 4 * 500 * 2
