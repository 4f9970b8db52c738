"""OpenTelemetry spans built from the runner's event stream (spec section 10.1).

`OpenTelemetryListener` is an ordinary event listener: it opens a span when a run, scope, step or
executor call starts and ends it when the matching finish event arrives. While a span is open it is
the *current* span, so spans started by code running inside it (pydantic-ai's own instrumentation,
nested steps) become its children.

Span tree::

    nighthawk.run                    run.id, scope.id
    └── nighthawk.scope              run.id, scope.id
        └── nighthawk.step           run.id, scope.id, step.id   (+ step events)
            └── nighthawk.step_executor   run.id, scope.id, step.id
                └── (pydantic-ai agent, model and tool spans)

The runner imports this module lazily, only when a listener is needed, so an unobserved program
never loads it.
"""

from __future__ import annotations

import logging
import threading
from contextvars import Token
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, assert_never

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, Status, StatusCode

from . import events

if TYPE_CHECKING:
    from collections.abc import Mapping

    from opentelemetry.context import Context
    from opentelemetry.trace import Span, TracerProvider
    from opentelemetry.util.types import Attributes

__all__ = [
    "IDENTITY_ATTRIBUTES",
    "OVERSIGHT_EVENT_ATTRIBUTES",
    "OVERSIGHT_EVENT_NAME",
    "SPAN_NAMES",
    "STEP_EVENT_ATTRIBUTES",
    "STEP_EVENT_NAMES",
    "USAGE_ATTRIBUTES",
    "OpenTelemetryListener",
    "install_default_listener",
]

_logger = logging.getLogger("nighthawk")

_INSTRUMENTATION_NAME: Final = "nighthawk"

# The hand-kept name table of spec section 10.1. tests/core/test_telemetry.py pins it against the
# spec, so a rename here without a spec change (or the other way round) fails a test.
_RUN_SPAN: Final = "nighthawk.run"
_SCOPE_SPAN: Final = "nighthawk.scope"
_STEP_SPAN: Final = "nighthawk.step"
_STEP_EXECUTOR_SPAN: Final = "nighthawk.step_executor"

_RUN_ID: Final = "run.id"
_SCOPE_ID: Final = "scope.id"
_STEP_ID: Final = "step.id"

_STEP_COMPLETED: Final = "nighthawk.step.completed"
_STEP_RAISED: Final = "nighthawk.step.raised"
_STEP_FAILED: Final = "nighthawk.step.failed"

_OUTCOME_KIND: Final = "nighthawk.step.outcome_kind"
_RAISE_MESSAGE: Final = "nighthawk.step.raise_message"
_RAISE_ERROR_TYPE: Final = "nighthawk.step.raise_error_type"
_ERROR_KIND: Final = "nighthawk.step.error_kind"
_ERROR_MESSAGE: Final = "nighthawk.step.error_message"

# What a step spent (set on the step span, failed steps included).
_USAGE_MODEL: Final = "nighthawk.step.usage.model"
_USAGE_REQUESTS: Final = "nighthawk.step.usage.requests"
_USAGE_INPUT_TOKENS: Final = "nighthawk.step.usage.input_tokens"
_USAGE_OUTPUT_TOKENS: Final = "nighthawk.step.usage.output_tokens"
_USAGE_COST: Final = "nighthawk.step.usage.cost_usd"
_USAGE_CACHE_READ_TOKENS: Final = "nighthawk.step.usage.cache_read_tokens"
_USAGE_FAILED_REQUESTS: Final = "nighthawk.step.usage.failed_requests"

# Each oversight decision (beyond the spec's table): an event on the step span.
_OVERSIGHT_DECISION: Final = "nighthawk.oversight.decision"
_OVERSIGHT_HOOK: Final = "nighthawk.oversight.hook"
_OVERSIGHT_NAME: Final = "nighthawk.oversight.name"
_OVERSIGHT_VERDICT: Final = "nighthawk.oversight.verdict"
_OVERSIGHT_REASON: Final = "nighthawk.oversight.reason"
_OVERSIGHT_TOOL: Final = "nighthawk.oversight.tool_name"

# OpenTelemetry semantic-convention names for a recorded exception (the SDK's `record_exception`
# uses the same ones, but it needs a live exception object and events only carry names).
_EXCEPTION_EVENT: Final = "exception"
_EXCEPTION_TYPE: Final = "exception.type"
_EXCEPTION_MESSAGE: Final = "exception.message"

SPAN_NAMES: Final[tuple[str, ...]] = (_RUN_SPAN, _SCOPE_SPAN, _STEP_SPAN, _STEP_EXECUTOR_SPAN)
"""Every span name Nighthawk emits."""

IDENTITY_ATTRIBUTES: Final[tuple[str, ...]] = (_RUN_ID, _SCOPE_ID, _STEP_ID)
"""The identity attributes; `step.id` (`python_module:line`) is set on step and executor spans only."""

USAGE_ATTRIBUTES: Final[tuple[str, ...]] = (
    _USAGE_MODEL,
    _USAGE_REQUESTS,
    _USAGE_INPUT_TOKENS,
    _USAGE_OUTPUT_TOKENS,
    _USAGE_COST,
    _USAGE_CACHE_READ_TOKENS,
    _USAGE_FAILED_REQUESTS,
)
"""Attributes of a step span that carry what the step spent (added beside the spec's identity attributes)."""

STEP_EVENT_ATTRIBUTES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        _STEP_COMPLETED: (_OUTCOME_KIND,),
        _STEP_RAISED: (_OUTCOME_KIND, _RAISE_MESSAGE, _RAISE_ERROR_TYPE),
        _STEP_FAILED: (_ERROR_KIND, _ERROR_MESSAGE),
    }
)
"""Each event emitted on `nighthawk.step`, with the attributes it may carry."""

STEP_EVENT_NAMES: Final[tuple[str, ...]] = tuple(STEP_EVENT_ATTRIBUTES)
"""Every event name of spec section 10.1 emitted on `nighthawk.step` (besides the standard `exception` event
and the oversight decisions)."""

OVERSIGHT_EVENT_NAME: Final = _OVERSIGHT_DECISION
"""The event an oversight decision adds to the step span (`nighthawk.oversight`)."""

OVERSIGHT_EVENT_ATTRIBUTES: Final[tuple[str, ...]] = (
    _OVERSIGHT_HOOK,
    _OVERSIGHT_NAME,
    _OVERSIGHT_VERDICT,
    _OVERSIGHT_REASON,
    _OVERSIGHT_TOOL,
)
"""The attributes it may carry: which hook, which oversight, `accepted`/`rejected`/`rewritten`, why, and
the tool asked about."""

# Global providers that record nothing. While one of them is installed the default listener
# reports itself inactive, so the runner does not even build events for it.
_PLACEHOLDER_PROVIDERS: Final = (ProxyTracerProvider, NoOpTracerProvider)


@dataclass(frozen=True, slots=True)
class _OpenSpan:
    """A span this listener started and has not ended yet."""

    span: Span
    token: Token[Context]
    """Undoes the `attach` that made `span` current."""
    identity: dict[str, str]
    """The identity attributes, copied onto child spans that need them (the executor span)."""


class OpenTelemetryListener:
    """An event listener that reports runs, scopes and steps as OpenTelemetry spans.

    Register it for a block with `events.listen(listener)`, or process-wide with
    `install_default_listener()`. Calling the instance with an event is its only public behaviour
    besides `active`.

    The listener keeps one record per open span, keyed by scope id or step invocation id, and drops
    it when the span ends, so it holds nothing while nothing is open. Finish events for a span it
    never saw (for example because it became active in the middle of a step) are ignored.
    """

    def __init__(self, *, tracer_provider: TracerProvider | None = None) -> None:
        """Create a listener.

        Args:
            tracer_provider: Where the spans go. Defaults to the global provider; while that is
                still OpenTelemetry's placeholder the listener is inactive and records nothing.
        """
        self._explicit_provider = tracer_provider is not None
        # With no explicit provider this is a proxy tracer that starts delegating to the real one
        # as soon as the application installs a global provider, so it is safe to fetch it early.
        self._tracer = trace.get_tracer(_INSTRUMENTATION_NAME, tracer_provider=tracer_provider)
        self._scopes: dict[str, _OpenSpan] = {}
        self._steps: dict[str, _OpenSpan] = {}
        self._executors: dict[str, _OpenSpan] = {}

    @property
    def active(self) -> bool:
        """Whether spans would be recorded anywhere.

        True when a provider was given explicitly, or when the global provider is a real one.
        `events` reads this for every event it would deliver, so it stays a type check.
        """
        if self._explicit_provider:
            return True
        return not isinstance(trace.get_tracer_provider(), _PLACEHOLDER_PROVIDERS)

    def __call__(self, event: events.Event) -> None:
        """Update the spans for one runner event.

        Args:
            event: Any runner event; kinds that spec section 10.1 does not map are ignored.
        """
        match event:
            case events.RunStarted():
                self._start_scope(_RUN_SPAN, event.run_id, event.scope_id)
            case events.ScopeStarted():
                self._start_scope(_SCOPE_SPAN, event.run_id, event.scope_id)
            case events.ScopeFinished():
                self._finish_scope(event)
            case events.StepStarted():
                self._start_step(event)
            case events.ExecutorStarted():
                self._start_executor(event)
            case events.ExecutorFinished():
                self._finish_executor(event)
            case events.OutcomeReached():
                self._add_outcome(event)
            case events.StepFailed():
                self._add_failure(event)
            case events.StepFinished():
                self._finish_step(event)
            case events.UsageReported():
                self._add_usage(event)
            case events.OversightDecision():
                self._add_decision(event)
            case (
                events.PromptRendered()
                | events.ToolCallStarted()
                | events.ToolCallFinished()
                | events.ModelText()
                | events.Assignment()
                | events.Committed()
            ):
                # The contract has no place for these: pydantic-ai's own spans, children of the
                # executor span, already carry prompts and tool calls.
                pass
            case _:
                assert_never(event)

    def _start_scope(self, name: str, run_id: str, scope_id: str) -> None:
        identity = {_RUN_ID: run_id, _SCOPE_ID: scope_id}
        self._scopes[scope_id] = _open(self._tracer.start_span(name, attributes=identity), identity)

    def _finish_scope(self, event: events.ScopeFinished) -> None:
        # Runs and scopes share one table: a scope id is fresh for every `run` and `scope` entry.
        opened = self._scopes.pop(event.scope_id, None)
        if opened is None:
            return
        if event.error is not None:
            opened.span.set_status(Status(StatusCode.ERROR, event.error))
        _close(opened)

    def _start_step(self, event: events.StepStarted) -> None:
        identity = {_RUN_ID: event.run_id, _SCOPE_ID: event.scope_id, _STEP_ID: event.step_id}
        # No explicit parent: the current span is the enclosing scope, or for a step started from
        # inside another step's tool call, the innermost span of that call.
        span = self._tracer.start_span(_STEP_SPAN, attributes=identity)
        self._steps[event.invocation_id] = _open(span, identity)

    def _start_executor(self, event: events.ExecutorStarted) -> None:
        step = self._steps.get(event.invocation_id)
        if step is None:
            return
        # Parent explicitly on the step span so the tree holds even if the runner calls the
        # executor from a task whose context does not have the step span attached.
        span = self._tracer.start_span(
            _STEP_EXECUTOR_SPAN,
            context=trace.set_span_in_context(step.span),
            attributes=step.identity,
        )
        self._executors[event.invocation_id] = _open(span, step.identity)

    def _finish_executor(self, event: events.ExecutorFinished) -> None:
        opened = self._executors.pop(event.invocation_id, None)
        if opened is None:
            return
        if event.error is not None:
            opened.span.add_event(_EXCEPTION_EVENT, {_EXCEPTION_TYPE: event.error})
            opened.span.set_status(Status(StatusCode.ERROR, event.error))
        _close(opened)

    def _add_outcome(self, event: events.OutcomeReached) -> None:
        step = self._steps.get(event.invocation_id)
        if step is None:
            return
        if event.kind != "raise":
            step.span.add_event(_STEP_COMPLETED, {_OUTCOME_KIND: event.kind})
            return
        # A raise outcome is domain behaviour the program asked for, not a Nighthawk failure, so it
        # is an event only: the span status stays unset.
        attributes: dict[str, str] = {
            _OUTCOME_KIND: event.kind,
            # Attribute values cannot be None, and the spec makes the message mandatory.
            _RAISE_MESSAGE: event.raise_message or "",
        }
        if event.raise_error_type is not None:
            attributes[_RAISE_ERROR_TYPE] = event.raise_error_type
        step.span.add_event(_STEP_RAISED, attributes)

    def _add_decision(self, event: events.OversightDecision) -> None:
        step = self._steps.get(event.invocation_id)
        if step is None:
            return
        attributes: dict[str, str] = {
            _OVERSIGHT_HOOK: event.hook,
            _OVERSIGHT_NAME: event.oversight,
            _OVERSIGHT_VERDICT: event.decision,
        }
        if event.reason:
            attributes[_OVERSIGHT_REASON] = event.reason
        if event.tool_name:
            attributes[_OVERSIGHT_TOOL] = event.tool_name
        step.span.add_event(_OVERSIGHT_DECISION, attributes)

    def _add_usage(self, event: events.UsageReported) -> None:
        step = self._steps.get(event.invocation_id)
        if step is None:
            return
        # Under the `nighthawk.` prefix, not `gen_ai.usage.*`: pydantic-ai's model spans already carry
        # the gen_ai figures per request, and a back end summing those must not count a step twice.
        attributes: dict[str, str | int | float] = {
            _USAGE_MODEL: event.model,
            _USAGE_REQUESTS: event.requests,
            _USAGE_INPUT_TOKENS: event.input_tokens,
            _USAGE_OUTPUT_TOKENS: event.output_tokens,
            _USAGE_CACHE_READ_TOKENS: event.cache_read_tokens,
        }
        if event.cost_usd is not None:
            attributes[_USAGE_COST] = event.cost_usd
        if event.failed_requests:  # of `requests`, the unbilled ones: why a step cost less than its count says
            attributes[_USAGE_FAILED_REQUESTS] = event.failed_requests
        step.span.set_attributes(attributes)

    def _add_failure(self, event: events.StepFailed) -> None:
        step = self._steps.get(event.invocation_id)
        if step is None:
            return
        step.span.add_event(
            _STEP_FAILED, {_ERROR_KIND: event.error_kind, _ERROR_MESSAGE: event.error_message}
        )
        exception: Attributes = {_EXCEPTION_TYPE: event.error_type, _EXCEPTION_MESSAGE: event.error_message}
        step.span.add_event(_EXCEPTION_EVENT, exception)
        # Same description format as the SDK uses for an exception escaping `start_as_current_span`.
        step.span.set_status(Status(StatusCode.ERROR, f"{event.error_type}: {event.error_message}"))

    def _finish_step(self, event: events.StepFinished) -> None:
        # An executor span still open here lost its finish event (for example to a cancellation);
        # close it first so the attach/detach pairs still unwind innermost first.
        dangling = self._executors.pop(event.invocation_id, None)
        if dangling is not None:
            _logger.debug("nighthawk: closing executor span of %r without ExecutorFinished", event.invocation_id)
            _close(dangling)
        opened = self._steps.pop(event.invocation_id, None)
        if opened is not None:
            _close(opened)


def _open(span: Span, identity: dict[str, str]) -> _OpenSpan:
    """Make `span` the current span and remember how to undo that."""
    token = otel_context.attach(trace.set_span_in_context(span))
    return _OpenSpan(span=span, token=token, identity=identity)


def _close(opened: _OpenSpan) -> None:
    """Restore the context from before `_open` and end the span."""
    try:
        # `opentelemetry.context.detach` would swallow a failure too, but logs it at ERROR with a
        # traceback; a finish event delivered from another context is harmless for the trace, so
        # reset the token (a plain `contextvars.Token`) directly and note it at debug level.
        opened.token.var.reset(opened.token)
    except (ValueError, RuntimeError) as exc:
        _logger.debug("nighthawk: could not detach the context of a span: %s", exc)
    opened.span.end()


_default_listener: OpenTelemetryListener | None = None
_default_listener_lock = threading.Lock()


def install_default_listener() -> OpenTelemetryListener:
    """Register the process-wide listener that reports to the global tracer provider.

    Calling it again returns the same listener and registers it only once. The listener stays
    inactive (and costs nothing per step) until the application installs a real global provider.

    Returns:
        The process-wide listener.
    """
    global _default_listener
    # The lock keeps two threads that install at once from creating two listeners.
    with _default_listener_lock:
        if _default_listener is None:
            _default_listener = OpenTelemetryListener()
        events.add_process_listener(_default_listener)
        return _default_listener
