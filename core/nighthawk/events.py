"""The runner's event stream.

The runner reports what happens in a step as small frozen dataclasses. Listeners subscribe for a scope
with `listen(...)`; the OpenTelemetry emitter and the IPython widgets are ordinary listeners. When no
listener is registered the runner builds no events at all (`listening()` is checked first), so an
unobserved step pays nothing for observability. The registry lives in `nighthawk._listeners` (re-exported
here): making these twenty dataclasses takes about 11 ms, which `import nighthawk` and `%load_ext` do not
pay; this module loads with the first run, scope or step.

Values inside events are already bounded, masked previews (strings), never the live objects (the one
exception: a small image a step sent, as bytes, for a display's thumbnail), and `emit` scrubs every event of
the current step's secret values before any listener sees it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias, Union

from ._listeners import add_process_listener, emit, listen, listening, remove_process_listener
from .secrets import ContextRedaction


if TYPE_CHECKING:
    import pydantic

__all__ = [
    "Assignment",
    "Committed",
    "Event",
    "ExecutorFinished",
    "ExecutorStarted",
    "RunStarted",
    "ScopeFinished",
    "ScopeStarted",
    "EventListener",
    "LocalSource",
    "LocalsChange",
    "MediaShown",
    "ModelText",
    "OutcomeReached",
    "OversightDecision",
    "PromptRendered",
    "StepFailed",
    "StepFinished",
    "StepStarted",
    "ToolCallFinished",
    "ToolCallStarted",
    "UsageReported",
    "add_process_listener",
    "emit",
    "event_type_adapter",
    "listen",
    "listening",
    "remove_process_listener",
]


@dataclass(frozen=True, kw_only=True)
class RunStarted:
    """`nighthawk.run(...)` was entered."""

    run_id: str
    scope_id: str
    event_kind: Literal["run_started"] = "run_started"


@dataclass(frozen=True, kw_only=True)
class ScopeStarted:
    """`nighthawk.scope(...)` was entered."""

    run_id: str
    scope_id: str
    event_kind: Literal["scope_started"] = "scope_started"


@dataclass(frozen=True, kw_only=True)
class ScopeFinished:
    """A run or a scope was left; `error` names the exception that left it, if any."""

    run_id: str
    scope_id: str
    is_run: bool
    error: str | None
    event_kind: Literal["scope_finished"] = "scope_finished"


@dataclass(frozen=True, kw_only=True)
class ExecutorStarted:
    """The step executor was asked for an outcome."""

    invocation_id: str
    executor: str
    event_kind: Literal["executor_started"] = "executor_started"


@dataclass(frozen=True, kw_only=True)
class ExecutorFinished:
    """The step executor returned (`error` is `None`) or raised."""

    invocation_id: str
    error: str | None
    event_kind: Literal["executor_finished"] = "executor_finished"


@dataclass(frozen=True, kw_only=True)
class StepStarted:
    """A Natural block began executing."""

    step_id: str
    """`module:line` of the block."""
    invocation_id: str
    """Unique id of this execution of the block (a block in a loop runs many times)."""
    parent_invocation_id: str | None
    """The enclosing step's invocation, when a natural function is called from inside a step."""
    run_id: str
    scope_id: str
    program: str
    """The program text the model sees (frontmatter stripped, escapes removed)."""
    model: str
    """A readable name of the executor's model."""
    allowed_outcomes: tuple[str, ...]
    placeholder: str = ContextRedaction.placeholder
    """The text that replaces a secret in this step's events (its `ContextRedaction.placeholder`)."""
    local_sources: tuple[LocalSource, ...] = ()
    """A natural function's locals when the block started, each with where the step's code can take it
    from (empty for a notebook cell, whose names are the notebook's own)."""
    isolated: bool = False
    """The model's code runs in a walled child (`nighthawk.oversight.isolated`): in-place changes stay there."""
    event_kind: Literal["step_started"] = "step_started"


@dataclass(frozen=True, kw_only=True)
class LocalSource:
    """One local of a natural function when its block started, and how code run in the notebook can bind it."""

    name: str
    parameter: bool
    """Whether it is a parameter of the function (its value is an argument of the call), not a variable the
    function set before the block."""
    source: Literal["name", "literal", "unnamed"]
    """`name`: a name of the notebook (`__main__`) holds the very object; `literal`: the value written as a
    Python literal (a number, a short string, a small list of them); `unnamed`: neither."""
    expression: str | None = None
    """The notebook name or the literal; `None` when `unnamed`."""
    type_name: str = ""
    """The value's type (`DataFrame`), to say what to bind when nothing names it."""


@dataclass(frozen=True, kw_only=True)
class MediaShown:
    """An image or document a step sent beside its prompt, as a display shows it."""

    binding: str
    """The read binding that held it."""
    media_type: str
    """Its MIME type (`image/png`, `application/pdf`, ...)."""
    placeholder: str
    """What LOCALS shows in its place (`<attachment 1: image/png, 12.3 kB>`)."""
    thumbnail: bytes | None = None
    """A JPEG of the image shrunk to fit 160x120 px, a few kB, for a display to embed (bytes: no scrubber
    rewrites them); `None` for a document or a URL, or when Pillow is not installed."""


@dataclass(frozen=True, kw_only=True)
class PromptRendered:
    """The prompts sent with the first model request of a step."""

    invocation_id: str
    system_prompt: str
    user_prompt: str
    media: tuple[MediaShown, ...] = ()
    """The images and documents sent with the user prompt, in the order sent."""
    event_kind: Literal["prompt_rendered"] = "prompt_rendered"


@dataclass(frozen=True, kw_only=True)
class ToolCallStarted:
    """The model called a tool."""

    invocation_id: str
    call_id: str
    tool_name: str
    arguments: str
    """The arguments as bounded, masked JSON text."""
    expression: str | None = None
    """The whole expression of an `nh_eval` or `nh_assign` call as the model wrote it (masked like the rest
    of the event), so a display can show the step as Python; `None` for other tools."""
    target: str | None = None
    """The `target_path` of an `nh_assign` call."""
    event_kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass(frozen=True, kw_only=True)
class ToolCallFinished:
    """A tool call returned its envelope."""

    invocation_id: str
    call_id: str
    tool_name: str
    result: str
    """Bounded, masked preview of the `value` of the envelope (empty on error)."""
    error_kind: str | None
    """One of `invalid_input`, `resolution`, `execution`, `transient`, `internal`, or `None`."""
    error_message: str | None
    duration_s: float
    awaited: bool = False
    """The runtime awaited the value an `nh_eval` or `nh_assign` expression gave (`fetch()` of an `async
    def`, written without `await`): the step's code is `await fetch()`."""
    event_kind: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(frozen=True, kw_only=True)
class OversightDecision:
    """An oversight hook decided on a tool call (before it ran) or on a commit, or a runtime policy refused an
    operation of model-written code while it ran (`hook="runtime"`, always `rejected`) (`nighthawk.oversight`)."""

    invocation_id: str
    hook: Literal["inspect_tool_call", "inspect_step_commit", "runtime"]
    oversight: str
    """The name of the oversight that decided (`read_only`, `confirm`, the hook's function name)."""
    decision: Literal["accepted", "rejected", "rewritten"]
    reason: str | None = None
    tool_name: str | None = None
    """The tool asked about (tool-call decisions only)."""
    call_id: str | None = None
    """The call of `ToolCallStarted` the decision is about (tool-call decisions only)."""
    names: tuple[str, ...] = ()
    """The write bindings a rewrite replaced."""
    event_kind: Literal["oversight_decision"] = "oversight_decision"


@dataclass(frozen=True, kw_only=True)
class ModelText:
    """The model answered without calling any tool; a step goes on only through tool calls."""

    invocation_id: str
    text: str
    """What the model wrote, clipped (empty when it sent nothing at all)."""
    count: int
    """How many responses of this step so far had no tool call."""
    event_kind: Literal["model_text"] = "model_text"


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """`nh_assign` stored a value in the step (not yet committed to Python)."""

    invocation_id: str
    target: str
    value: str
    """Bounded, masked preview of the assigned value."""
    event_kind: Literal["assignment"] = "assignment"


@dataclass(frozen=True, kw_only=True)
class OutcomeReached:
    """The block ended with a valid outcome."""

    invocation_id: str
    kind: str
    return_expression: str | None = None
    return_value: str | None = None
    """Bounded, masked preview of the returned value."""
    return_awaited: bool = False
    """The runtime awaited the value `return_expression` gave (an async function's block)."""
    raise_message: str | None = None
    raise_error_type: str | None = None
    event_kind: Literal["outcome"] = "outcome"


@dataclass(frozen=True, kw_only=True)
class LocalsChange:
    """One entry of the step-locals diff."""

    name: str
    change: Literal["added", "changed", "removed"]
    before: str | None
    after: str | None
    committed: bool
    """True when the name is a write binding and its value was committed to Python."""
    in_place: bool = False
    """True when the name still holds the object it started with and that object changed: the change is
    already visible in Python (a notebook variable sorted or given a new column), committed or not."""


@dataclass(frozen=True, kw_only=True)
class Committed:
    """Write bindings were committed into Python locals (or the notebook namespace)."""

    invocation_id: str
    names: tuple[str, ...]
    changes: tuple[LocalsChange, ...]
    """The step-locals diff, bounded and masked."""
    unset: tuple[str, ...] = ()
    """Write bindings the step ended without setting (unbound before the step and never assigned)."""
    event_kind: Literal["committed"] = "committed"


@dataclass(frozen=True, kw_only=True)
class UsageReported:
    """Model usage of one step (also reported when the step failed or was interrupted)."""

    invocation_id: str
    requests: int
    input_tokens: int
    output_tokens: int
    model: str = ""
    """Label of the model that answered."""
    cost_usd: float | None = None
    """US dollars as priced by genai-prices; `None` when the model is unpriced."""
    cache_read_tokens: int = 0
    """Of `input_tokens`, those the provider read from its prompt cache."""
    failed_requests: int = 0
    """Of `requests`, those the provider answered with an error (not billed: they cost 0)."""
    event_kind: Literal["usage"] = "usage"


@dataclass(frozen=True, kw_only=True)
class StepFailed:
    """The block failed or was interrupted; no binding was committed (changes made in place to objects stay)."""

    invocation_id: str
    error_type: str
    """The exception's class name."""
    error_kind: str
    """`parse`, `execution`, `tool`, `configuration` (the model cannot be used as set up: a missing API key, an
    unknown provider), `interrupted`, `python` (an exception from user code) or `internal` (the runtime failed)."""
    error_message: str
    interrupted: bool
    event_kind: Literal["step_failed"] = "step_failed"


@dataclass(frozen=True, kw_only=True)
class StepFinished:
    """The block is over, whatever its result."""

    invocation_id: str
    status: Literal["completed", "raised", "failed", "interrupted"]
    duration_s: float
    event_kind: Literal["step_finished"] = "step_finished"


Event: TypeAlias = Union[  # noqa: UP007 - a runtime union object, annotated with its discriminator lazily
    RunStarted
    | ScopeStarted
    | ScopeFinished
    | ExecutorStarted
    | ExecutorFinished
    | StepStarted
    | PromptRendered
    | ToolCallStarted
    | ToolCallFinished
    | OversightDecision
    | ModelText
    | Assignment
    | OutcomeReached
    | Committed
    | UsageReported
    | StepFailed
    | StepFinished
]

@functools.cache
def event_type_adapter() -> pydantic.TypeAdapter[list[Event]]:
    """The adapter that turns a list of events into JSON and back (built on first use).

    pydantic is imported here rather than at module level so that `import nighthawk` stays light.
    """
    import pydantic

    # Thumbnails are bytes of an image: JSON carries them as base64.
    config = pydantic.ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")
    return pydantic.TypeAdapter(list[Annotated[Event, pydantic.Discriminator("event_kind")]], config=config)


EventListener: TypeAlias = Callable[[Event], None]
"""A listener: called with each event (the registry in `nighthawk._listeners` takes any such callable)."""
