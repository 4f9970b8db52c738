"""Tests for `nighthawk.telemetry`: runner events in, OpenTelemetry spans out (spec section 10.1).

Every test passes its own SDK `TracerProvider` to the listener; none touches the global provider,
which OpenTelemetry lets a process set only once.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from typing import Literal, get_args

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import ProxyTracerProvider, StatusCode

from nighthawk import _listeners, events, telemetry

RUN_ID = "run-1"
SCOPE_ID = "scope-1"
INVOCATION_ID = "inv-1"
STEP_ID = "cells.analysis:12"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


@pytest.fixture
def listener(provider: TracerProvider) -> Iterator[telemetry.OpenTelemetryListener]:
    listener = telemetry.OpenTelemetryListener(tracer_provider=provider)
    yield listener
    # A test that leaves a span open would leak its attached context into the next test.
    assert trace.get_current_span() is trace.INVALID_SPAN


def _feed(listener: telemetry.OpenTelemetryListener, *sequence: events.Event) -> None:
    for event in sequence:
        listener(event)


def _step_started(
    invocation_id: str = INVOCATION_ID, step_id: str = STEP_ID, parent_invocation_id: str | None = None
) -> events.StepStarted:
    return events.StepStarted(
        step_id=step_id,
        invocation_id=invocation_id,
        parent_invocation_id=parent_invocation_id,
        run_id=RUN_ID,
        scope_id=SCOPE_ID,
        program="Set <:answer> to 42.",
        model="function:script",
        allowed_outcomes=("pass", "raise"),
    )


def _step_finished(
    invocation_id: str = INVOCATION_ID, status: Literal["completed", "raised", "failed", "interrupted"] = "completed"
) -> events.StepFinished:
    return events.StepFinished(invocation_id=invocation_id, status=status, duration_s=0.5)


def _run_started() -> events.RunStarted:
    return events.RunStarted(run_id=RUN_ID, scope_id="run-scope")


def _run_finished(error: str | None = None) -> events.ScopeFinished:
    return events.ScopeFinished(run_id=RUN_ID, scope_id="run-scope", is_run=True, error=error)


def _scope_started() -> events.ScopeStarted:
    return events.ScopeStarted(run_id=RUN_ID, scope_id=SCOPE_ID)


def _scope_finished(error: str | None = None) -> events.ScopeFinished:
    return events.ScopeFinished(run_id=RUN_ID, scope_id=SCOPE_ID, is_run=False, error=error)


def _full_sequence() -> list[events.Event]:
    """One run with one scope and one step that touches every event kind."""
    return [
        _run_started(),
        _scope_started(),
        _step_started(),
        events.PromptRendered(invocation_id=INVOCATION_ID, system_prompt="sys", user_prompt="user"),
        events.ExecutorStarted(invocation_id=INVOCATION_ID, executor="pydantic-ai"),
        events.ToolCallStarted(invocation_id=INVOCATION_ID, call_id="c1", tool_name="nh_assign", arguments="{}"),
        events.ToolCallFinished(
            invocation_id=INVOCATION_ID,
            call_id="c1",
            tool_name="nh_assign",
            result="42",
            error_kind=None,
            error_message=None,
            duration_s=0.01,
        ),
        events.Assignment(invocation_id=INVOCATION_ID, target="answer", value="42"),
        events.ModelText(invocation_id=INVOCATION_ID, text="Let me think.", count=1),
        events.OversightDecision(
            invocation_id=INVOCATION_ID,
            hook="inspect_tool_call",
            oversight="read_only",
            decision="rejected",
            reason="no",
            tool_name="nh_eval",
            call_id="c2",
        ),
        events.UsageReported(invocation_id=INVOCATION_ID, requests=1, input_tokens=10, output_tokens=5),
        events.ExecutorFinished(invocation_id=INVOCATION_ID, error=None),
        events.OutcomeReached(invocation_id=INVOCATION_ID, kind="raise", raise_message="no", raise_error_type="X"),
        events.StepFailed(
            invocation_id=INVOCATION_ID,
            error_type="E",
            error_kind="internal",
            error_message="m",
            interrupted=False,
        ),
        events.OutcomeReached(invocation_id=INVOCATION_ID, kind="pass"),
        events.Committed(invocation_id=INVOCATION_ID, names=("answer",), changes=()),
        _step_finished(),
        _scope_finished(),
        _run_finished(),
    ]


def _span(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    (span,) = [span for span in exporter.get_finished_spans() if span.name == name]
    return span


def _parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def test_span_and_event_names_match_spec() -> None:
    # Copied by hand from spec section 10.1; update both sides together.
    assert telemetry.SPAN_NAMES == (
        "nighthawk.run",
        "nighthawk.scope",
        "nighthawk.step",
        "nighthawk.step_executor",
    )
    assert telemetry.IDENTITY_ATTRIBUTES == ("run.id", "scope.id", "step.id")
    assert dict(telemetry.STEP_EVENT_ATTRIBUTES) == {
        "nighthawk.step.completed": ("nighthawk.step.outcome_kind",),
        "nighthawk.step.raised": (
            "nighthawk.step.outcome_kind",
            "nighthawk.step.raise_message",
            "nighthawk.step.raise_error_type",
        ),
        "nighthawk.step.failed": ("nighthawk.step.error_kind", "nighthawk.step.error_message"),
    }
    assert telemetry.STEP_EVENT_NAMES == tuple(telemetry.STEP_EVENT_ATTRIBUTES)


def test_emitted_names_stay_within_the_name_table(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(listener, *_full_sequence())

    spans = exporter.get_finished_spans()
    assert sorted(span.name for span in spans) == sorted(telemetry.SPAN_NAMES)
    for span in spans:
        assert set(span.attributes or {}) <= {*telemetry.IDENTITY_ATTRIBUTES, *telemetry.USAGE_ATTRIBUTES}
    step_events = [
        event
        for event in _span(exporter, "nighthawk.step").events
        if event.name not in ("exception", telemetry.OVERSIGHT_EVENT_NAME)
    ]
    assert {event.name for event in step_events} == set(telemetry.STEP_EVENT_NAMES)
    for event in step_events:
        assert set(event.attributes or {}) <= set(telemetry.STEP_EVENT_ATTRIBUTES[event.name])
    (decision,) = [e for e in _span(exporter, "nighthawk.step").events if e.name == telemetry.OVERSIGHT_EVENT_NAME]
    assert set(decision.attributes or {}) <= set(telemetry.OVERSIGHT_EVENT_ATTRIBUTES)


def test_full_sequence_covers_every_event_kind() -> None:
    # Guards the test above: a new event kind must be added to the sequence (and to the listener's
    # `match`, which ends in `assert_never`).
    assert {type(event) for event in _full_sequence()} == set(get_args(events.Event))


def test_run_started_opens_run_span_with_identity_attributes(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(listener, _run_started(), _run_finished())

    span = _span(exporter, "nighthawk.run")
    assert dict(span.attributes or {}) == {"run.id": RUN_ID, "scope.id": "run-scope"}
    assert span.parent is None


def test_scope_span_is_child_of_run_span(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(listener, _run_started(), _scope_started(), _scope_finished(), _run_finished())

    scope = _span(exporter, "nighthawk.scope")
    assert dict(scope.attributes or {}) == {"run.id": RUN_ID, "scope.id": SCOPE_ID}
    assert _parent_of(scope) == _span_id(_span(exporter, "nighthawk.run"))


def test_scope_finished_with_error_sets_error_status(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(listener, _scope_started(), _scope_finished(error="KeyboardInterrupt"))

    status = _span(exporter, "nighthawk.scope").status
    assert status.status_code is StatusCode.ERROR
    assert status.description == "KeyboardInterrupt"


def test_run_finished_without_error_leaves_status_unset(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(listener, _run_started(), _run_finished())

    assert _span(exporter, "nighthawk.run").status.status_code is StatusCode.UNSET


def test_step_span_carries_step_id_and_is_child_of_scope_span(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(listener, _scope_started(), _step_started(), _step_finished(), _scope_finished())

    step = _span(exporter, "nighthawk.step")
    assert dict(step.attributes or {}) == {"run.id": RUN_ID, "scope.id": SCOPE_ID, "step.id": STEP_ID}
    assert _parent_of(step) == _span_id(_span(exporter, "nighthawk.scope"))


def test_executor_span_is_child_of_step_span_with_its_identity(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.ExecutorStarted(invocation_id=INVOCATION_ID, executor="pydantic-ai"),
        events.ExecutorFinished(invocation_id=INVOCATION_ID, error=None),
        _step_finished(),
    )

    executor = _span(exporter, "nighthawk.step_executor")
    assert dict(executor.attributes or {}) == {"run.id": RUN_ID, "scope.id": SCOPE_ID, "step.id": STEP_ID}
    assert _parent_of(executor) == _span_id(_span(exporter, "nighthawk.step"))
    assert executor.status.status_code is StatusCode.UNSET


def test_executor_error_sets_error_status_and_exception_event(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.ExecutorStarted(invocation_id=INVOCATION_ID, executor="pydantic-ai"),
        events.ExecutorFinished(invocation_id=INVOCATION_ID, error="ModelHTTPError"),
        _step_finished(status="failed"),
    )

    executor = _span(exporter, "nighthawk.step_executor")
    assert executor.status.status_code is StatusCode.ERROR
    assert executor.status.description == "ModelHTTPError"
    assert [(event.name, dict(event.attributes or {})) for event in executor.events] == [
        ("exception", {"exception.type": "ModelHTTPError"})
    ]


def test_non_raise_outcome_adds_completed_event(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.OutcomeReached(invocation_id=INVOCATION_ID, kind="return", return_expression="x"),
        _step_finished(),
    )

    step = _span(exporter, "nighthawk.step")
    assert [(event.name, dict(event.attributes or {})) for event in step.events] == [
        ("nighthawk.step.completed", {"nighthawk.step.outcome_kind": "return"})
    ]
    assert step.status.status_code is StatusCode.UNSET


def test_raise_outcome_adds_raised_event_without_error_status(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.OutcomeReached(
            invocation_id=INVOCATION_ID, kind="raise", raise_message="no rows", raise_error_type="ValueError"
        ),
        _step_finished(status="raised"),
    )

    step = _span(exporter, "nighthawk.step")
    assert [(event.name, dict(event.attributes or {})) for event in step.events] == [
        (
            "nighthawk.step.raised",
            {
                "nighthawk.step.outcome_kind": "raise",
                "nighthawk.step.raise_message": "no rows",
                "nighthawk.step.raise_error_type": "ValueError",
            },
        )
    ]
    assert step.status.status_code is StatusCode.UNSET


def test_raise_outcome_without_error_type_omits_the_attribute(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.OutcomeReached(invocation_id=INVOCATION_ID, kind="raise", raise_message="no rows"),
        _step_finished(status="raised"),
    )

    (event,) = _span(exporter, "nighthawk.step").events
    assert dict(event.attributes or {}) == {
        "nighthawk.step.outcome_kind": "raise",
        "nighthawk.step.raise_message": "no rows",
    }


def test_step_failed_adds_failed_and_exception_events(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.StepFailed(
            invocation_id=INVOCATION_ID,
            error_type="ExecutionError",
            error_kind="execution",
            error_message="model gave no outcome",
            interrupted=False,
        ),
        _step_finished(status="failed"),
    )

    step = _span(exporter, "nighthawk.step")
    assert [(event.name, dict(event.attributes or {})) for event in step.events] == [
        (
            "nighthawk.step.failed",
            {"nighthawk.step.error_kind": "execution", "nighthawk.step.error_message": "model gave no outcome"},
        ),
        ("exception", {"exception.type": "ExecutionError", "exception.message": "model gave no outcome"}),
    ]


def test_step_failed_sets_error_status_with_description(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.StepFailed(
            invocation_id=INVOCATION_ID,
            error_type="ExecutionError",
            error_kind="execution",
            error_message="model gave no outcome",
            interrupted=False,
        ),
        _step_finished(status="failed"),
    )

    status = _span(exporter, "nighthawk.step").status
    assert status.status_code is StatusCode.ERROR
    assert status.description == "ExecutionError: model gave no outcome"


def test_usage_adds_attributes_but_no_events_and_no_gen_ai_figures_to_the_step_span(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.UsageReported(invocation_id=INVOCATION_ID, requests=1, input_tokens=10, output_tokens=5),
        _step_finished(),
    )

    step = _span(exporter, "nighthawk.step")
    # pydantic-ai's model spans carry gen_ai.usage.*; repeating them on the step would count tokens twice.
    assert not any(name.startswith("gen_ai.") for name in step.attributes or {})
    assert "nighthawk.step.usage.cost_usd" not in (step.attributes or {})  # unpriced: no cost attribute
    assert step.events == ()


def test_span_started_inside_executor_span_is_its_child(
    listener: telemetry.OpenTelemetryListener, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    # Stands in for pydantic-ai's instrumentation, which starts spans under the current one.
    _feed(listener, _step_started(), events.ExecutorStarted(invocation_id=INVOCATION_ID, executor="pydantic-ai"))
    with provider.get_tracer("pydantic-ai").start_as_current_span("agent run"):
        pass
    _feed(listener, events.ExecutorFinished(invocation_id=INVOCATION_ID, error=None), _step_finished())

    assert _parent_of(_span(exporter, "agent run")) == _span_id(_span(exporter, "nighthawk.step_executor"))


def test_nested_step_span_is_child_of_enclosing_step_span(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(invocation_id="outer", step_id="cells:1"),
        _step_started(invocation_id="inner", step_id="helpers:7", parent_invocation_id="outer"),
        _step_finished(invocation_id="inner"),
        _step_finished(invocation_id="outer"),
    )

    spans = {span.attributes["step.id"]: span for span in exporter.get_finished_spans() if span.attributes}
    assert _parent_of(spans["helpers:7"]) == _span_id(spans["cells:1"])


def test_step_span_is_current_only_while_open(listener: telemetry.OpenTelemetryListener) -> None:
    _feed(listener, _step_started())
    current_while_open = trace.get_current_span()
    _feed(listener, _step_finished())

    assert isinstance(current_while_open, ReadableSpan)
    assert current_while_open.name == "nighthawk.step"
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_no_state_remains_after_every_span_finishes(listener: telemetry.OpenTelemetryListener) -> None:
    _feed(listener, *_full_sequence())

    assert (listener._scopes, listener._steps, listener._executors) == ({}, {}, {})


def test_step_finished_ends_an_executor_span_left_open(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    _feed(
        listener,
        _step_started(),
        events.ExecutorStarted(invocation_id=INVOCATION_ID, executor="pydantic-ai"),
        _step_finished(status="interrupted"),
    )

    assert sorted(span.name for span in exporter.get_finished_spans()) == ["nighthawk.step", "nighthawk.step_executor"]
    assert listener._executors == {}


def test_events_for_spans_never_started_are_ignored(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    # Happens when the listener becomes active in the middle of a step.
    _feed(
        listener,
        events.ExecutorStarted(invocation_id=INVOCATION_ID, executor="pydantic-ai"),
        events.ExecutorFinished(invocation_id=INVOCATION_ID, error=None),
        events.OutcomeReached(invocation_id=INVOCATION_ID, kind="pass"),
        events.StepFailed(
            invocation_id=INVOCATION_ID, error_type="E", error_kind="internal", error_message="m", interrupted=False
        ),
        _step_finished(),
        _scope_finished(),
    )

    assert exporter.get_finished_spans() == ()


def test_finish_from_another_context_ends_span_and_logs_at_debug(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    started_in = contextvars.copy_context()
    started_in.run(listener, _step_started())
    # A copy holds the same values, but the attach token belongs to the original context.
    finished_in = started_in.copy()

    with caplog.at_level(logging.DEBUG, logger="nighthawk"):
        finished_in.run(listener, _step_finished())

    assert [span.name for span in exporter.get_finished_spans()] == ["nighthawk.step"]
    assert [record.levelno for record in caplog.records] == [logging.DEBUG]
    assert "could not detach" in caplog.records[0].getMessage()


def test_listener_with_explicit_provider_is_active(provider: TracerProvider) -> None:
    assert telemetry.OpenTelemetryListener(tracer_provider=provider).active


def test_listener_on_placeholder_global_provider_is_inactive(monkeypatch: pytest.MonkeyPatch) -> None:
    # What an application that never configured OpenTelemetry gets from the API.
    monkeypatch.setattr(trace, "get_tracer_provider", ProxyTracerProvider)

    assert not telemetry.OpenTelemetryListener().active


def test_listener_on_real_global_provider_is_active(
    monkeypatch: pytest.MonkeyPatch, provider: TracerProvider
) -> None:
    # Stands in for `trace.set_tracer_provider`, which a process may call only once.
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)

    assert telemetry.OpenTelemetryListener().active


def test_install_default_listener_registers_one_listener_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_listeners, "_process_listeners", [])
    monkeypatch.setattr(telemetry, "_default_listener", None)

    first = telemetry.install_default_listener()
    second = telemetry.install_default_listener()

    assert first is second
    assert _listeners._process_listeners == [first]


def test_step_span_carries_the_usage_the_step_reported(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    sequence = [
        events.UsageReported(
            invocation_id=INVOCATION_ID, model="openai:gpt-4o", requests=2, input_tokens=10, output_tokens=5, cost_usd=0.25,
            cache_read_tokens=4,
        )
        if isinstance(event, events.UsageReported)
        else event
        for event in _full_sequence()
    ]
    _feed(listener, *sequence)

    attributes = dict(_span(exporter, "nighthawk.step").attributes or {})
    assert {name: attributes[name] for name in telemetry.USAGE_ATTRIBUTES if name in attributes} == {
        "nighthawk.step.usage.model": "openai:gpt-4o",
        "nighthawk.step.usage.requests": 2,
        "nighthawk.step.usage.input_tokens": 10,
        "nighthawk.step.usage.output_tokens": 5,
        "nighthawk.step.usage.cache_read_tokens": 4,
        "nighthawk.step.usage.cost_usd": 0.25,
    }


def test_step_span_counts_the_failed_requests_of_a_step_whose_provider_erred(
    listener: telemetry.OpenTelemetryListener, exporter: InMemorySpanExporter
) -> None:
    sequence = [
        events.UsageReported(
            invocation_id=INVOCATION_ID, model="openai:gpt-4o", requests=3, input_tokens=10, output_tokens=5, cost_usd=0.25,
            failed_requests=2,
        )
        if isinstance(event, events.UsageReported)
        else event
        for event in _full_sequence()
    ]
    _feed(listener, *sequence)

    attributes = dict(_span(exporter, "nighthawk.step").attributes or {})
    assert attributes["nighthawk.step.usage.requests"] == 3
    assert attributes["nighthawk.step.usage.failed_requests"] == 2
