"""What `nighthawk.resilience` did shows on the OpenTelemetry span around the call: each retry, giving up,
a fallback, an opened circuit, a timeout and a spent budget become span events (as well as log records)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nighthawk as nh
from nighthawk.resilience import CircuitOpenError, circuit_breaker, fallback, retrying, timeout


@pytest.fixture
def traced() -> Iterator[tuple[object, InMemorySpanExporter]]:
    """A tracer of a provider of the test's own (the global provider is left alone) and its exported spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter
    provider.shutdown()


def events_of(exporter: InMemorySpanExporter) -> list[tuple[str, dict[str, object]]]:
    (span,) = exporter.get_finished_spans()
    assert isinstance(span, ReadableSpan)
    return [(event.name, dict(event.attributes or {})) for event in span.events]


def flaky(failures: int):
    calls: list[int] = []

    def classify(text: str) -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise nh.ExecutionError("flaky")
        return "bug"

    return classify


def test_each_retry_is_an_event_with_its_attempt_and_error(traced) -> None:
    tracer, exporter = traced
    with tracer.start_as_current_span("call"):
        assert retrying(attempts=3, wait=0.0)(flaky(2))("text") == "bug"
    assert events_of(exporter) == [
        ("nighthawk.resilience.retry", {"nighthawk.resilience.attempt": attempt, "nighthawk.resilience.error_type":
         "ExecutionError", "nighthawk.resilience.wait_s": 0.0})
        for attempt in (1, 2)
    ]


def test_giving_up_is_an_event_after_the_last_attempt(traced) -> None:
    tracer, exporter = traced
    with tracer.start_as_current_span("call"), pytest.raises(nh.ExecutionError):
        retrying(attempts=2, wait=0.0)(flaky(5))("text")
    names = [name for name, _ in events_of(exporter)]
    assert names == ["nighthawk.resilience.retry", "nighthawk.resilience.gave_up"]


def test_a_fallback_names_the_function_that_failed_and_the_one_used(traced) -> None:
    tracer, exporter = traced

    def primary(text: str) -> str:
        raise nh.ExecutionError("down")

    def backup(text: str) -> str:
        return "other"

    with tracer.start_as_current_span("call"):
        assert fallback(primary, backup)("text") == "other"
    ((name, attributes),) = events_of(exporter)
    assert name == "nighthawk.resilience.fallback"
    assert attributes["nighthawk.resilience.failed"] == "primary"
    assert attributes["nighthawk.resilience.next"] == "backup"


def test_an_opened_circuit_is_an_event_with_the_failure_count(traced) -> None:
    tracer, exporter = traced
    guarded = circuit_breaker(fail_threshold=2, reset_timeout=60.0)(flaky(10))
    with tracer.start_as_current_span("call"):
        for _ in range(2):
            with pytest.raises(nh.ExecutionError):
                guarded("text")
        with pytest.raises(CircuitOpenError):
            guarded("text")
    ((name, attributes),) = events_of(exporter)
    assert name == "nighthawk.resilience.circuit_opened"
    assert attributes["nighthawk.resilience.failures"] == 2


def test_a_timeout_is_an_event_naming_the_function_and_the_limit(traced) -> None:
    tracer, exporter = traced

    def slow() -> None:
        time.sleep(0.5)

    with tracer.start_as_current_span("call"), pytest.raises(TimeoutError):
        timeout(seconds=0.05)(slow)()
    ((name, attributes),) = events_of(exporter)
    assert (name, attributes["nighthawk.resilience.function"], attributes["nighthawk.resilience.seconds"]) == (
        "nighthawk.resilience.timeout", "slow", 0.05,
    )


def test_without_a_recording_span_the_transformers_only_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="nighthawk.resilience"):
        assert retrying(attempts=2, wait=0.0)(flaky(1))("text") == "bug"
    assert [record.getMessage().split(":")[0] for record in caplog.records] == ["retrying"]


def test_a_refused_call_over_budget_is_an_event_with_the_limit_reached(traced) -> None:
    from pydantic_ai.usage import RunUsage

    from nighthawk.resilience import BudgetExceededError, budget

    tracer, exporter = traced
    with tracer.start_as_current_span("call"), nh.run(object()):  # type: ignore[arg-type]
        nh.get_current_usage_meter().record(RunUsage(input_tokens=30, output_tokens=20))  # type: ignore[union-attr]
        with pytest.raises(BudgetExceededError):
            budget(tokens=50)(flaky(0))("x")
    ((name, attributes),) = events_of(exporter)
    assert name == "nighthawk.resilience.budget_exceeded"
    assert (attributes["nighthawk.resilience.limit_kind"], attributes["nighthawk.resilience.reached"]) == ("tokens", 50)
