"""The runner's event stream, seen by listeners, and the OpenTelemetry spans it drives (spec 10.1)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nighthawk as nh
from nighthawk import events
from nighthawk.road import runner
from nighthawk.telemetry import OpenTelemetryListener
from scripting import call, finish, scripted_executor


@nh.natural_function
def bump(counter: list[int]) -> int:
    value = 0
    """natural
    Append to <counter> and set <:value>.
    """
    return value


def record(executor, *args):
    seen: list[object] = []
    with events.listen(seen.append), nh.run(executor):
        try:
            bump(*args)
        except Exception:
            pass
    return seen


def kinds(seen: list[object]) -> list[str]:
    return [event.event_kind for event in seen]


def test_successful_step_emits_the_full_sequence_in_order() -> None:
    executor, _ = scripted_executor(
        [call("nh_eval", expression="counter.append(1)"), call("nh_assign", target_path="value", expression="7"), finish()]
    )
    seen = record(executor, [])
    assert kinds(seen) == [
        "run_started",
        "step_started",
        "executor_started",
        "prompt_rendered",
        "tool_call_started",
        "tool_call_finished",
        "tool_call_started",
        "assignment",
        "tool_call_finished",
        "executor_finished",
        "outcome",
        "usage",
        "committed",
        "step_finished",
        "scope_finished",
    ]


def test_committed_event_carries_the_locals_diff() -> None:
    executor, _ = scripted_executor(
        [call("nh_eval", expression="counter.append(1)"), call("nh_assign", target_path="value", expression="7"), finish()]
    )
    committed = next(e for e in record(executor, []) if isinstance(e, events.Committed))
    assert committed.names == ("value",)
    changes = {change.name: change for change in committed.changes}
    assert (changes["value"].before, changes["value"].after, changes["value"].committed) == ("0", "7", True)
    assert (changes["counter"].change, changes["counter"].after, changes["counter"].committed) == ("changed", "[1]", False)


def test_failed_step_emits_failure_and_no_commit() -> None:
    executor, _ = scripted_executor("prose", "prose", "prose")
    seen = record(executor, [])
    assert "committed" not in kinds(seen)
    failure = next(e for e in seen if isinstance(e, events.StepFailed))
    assert (failure.error_type, failure.error_kind, failure.interrupted) == ("ExecutionError", "execution", False)
    assert seen[-2].status == "failed"


def test_tool_call_events_mask_secrets_in_arguments() -> None:
    secret = "sk-" + "Z9y8X7w6" * 6
    executor, _ = scripted_executor([call("nh_eval", expression=f"'{secret}'"), finish()])
    started = next(e for e in record(executor, []) if isinstance(e, events.ToolCallStarted))
    assert secret not in started.arguments


def test_no_events_are_built_when_nobody_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object) -> None:
        raise AssertionError("a locals snapshot was built with no listener")

    monkeypatch.setattr(runner, "_snapshot", forbidden)
    monkeypatch.setattr(events, "emit", forbidden)
    executor, _ = scripted_executor([finish()])
    with nh.run(executor):
        assert bump([]) == 0


def test_events_round_trip_through_the_type_adapter() -> None:
    executor, _ = scripted_executor([call("nh_assign", target_path="value", expression="1"), finish()])
    seen = record(executor, [])
    adapter = events.event_type_adapter()
    assert adapter.validate_json(adapter.dump_json(seen)) == seen


def test_opentelemetry_spans_nest_run_step_and_executor() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    executor, _ = scripted_executor([finish("raise", raise_message="nope", raise_error_type="ValueError")])
    with events.listen(OpenTelemetryListener(tracer_provider=provider)), nh.run(executor, run_id="run-1"):
        with pytest.raises(ValueError):
            bump([])
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) >= {"nighthawk.run", "nighthawk.step", "nighthawk.step_executor"}
    step = spans["nighthawk.step"]
    assert step.parent.span_id == spans["nighthawk.run"].context.span_id
    assert spans["nighthawk.step_executor"].parent.span_id == step.context.span_id
    assert step.attributes["run.id"] == "run-1"
    assert step.attributes["step.id"] == f"{__name__}:{bump.__wrapped__.__code__.co_firstlineno + 3}"
    raised = next(event for event in step.events if event.name == "nighthawk.step.raised")
    assert dict(raised.attributes) == {
        "nighthawk.step.outcome_kind": "raise",
        "nighthawk.step.raise_message": "nope",
        "nighthawk.step.raise_error_type": "ValueError",
    }
