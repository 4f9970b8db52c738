"""Stage 3, the step: the mutable state of one execution of a Natural block.

A step starts from the frame (stage 2): its locals are the parent step's locals, overlaid with the
caller's Python locals, overlaid with the resolved read bindings. Tools change only the step; nothing
reaches Python until the runner commits the write bindings.

The step carries what its executor offers the model, handed over when it is built: the user tools of the
enclosing scopes, the schema of the outcomes it may end with, and the policy that renders its values.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..budget import StepUsage
from ..configuration import StepContextLimits, StepExecutorConfiguration
from ..errors import NaturalParseError, NighthawkError, ToolValidationError
from ..program.block import OUTCOME_KINDS, Program
from ..program.frame import Frame
from ..secrets import ContextRedaction

if TYPE_CHECKING:
    # A type only: the outcome models import pydantic, which `import nighthawk` leaves out.
    from ..prompting._tokens import TokenCounter
    from ._outcome_kinds import Resolution
    from ._tool_registry import ToolDefinition, ToolScope

# The modules only a running step needs (rendering with datetime, decimal, pathlib and urllib; the token
# estimate with logging; the tool registry with inspect; validation) are imported by the functions below
# that use them: `import nighthawk` needs this module for `StepContext`, not for running a step.

__all__ = ["ExecutionContext", "RenderingPolicy", "StepContext", "get_current_step_context"]

# Exception types every step may raise by name, on top of exception classes found in its scope and builtin
# ones its program names (`raise TimeoutError when ...`). Each name is paid in every request's outcome schema,
# so only those a step raises on its own judgment are here: not AssertionError and AttributeError (signs of a
# bug), TimeoutError (a step does not time out on its own), nor the bases ArithmeticError and LookupError (a
# step reports ZeroDivisionError, KeyError or IndexError, which `except` of the base catches) and
# OverflowError (reported as ValueError).
_BUILTIN_RAISE_TYPES: tuple[str, ...] = (
    "FileNotFoundError",
    "IndexError",
    "KeyError",
    "NotImplementedError",
    "PermissionError",
    "RuntimeError",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
)


def _new_tool_scope() -> ToolScope:
    from ._tool_registry import ToolScope  # inspect (see the note at the top)

    return ToolScope()


@dataclass(frozen=True, kw_only=True)
class ExecutionContext:
    """Who is running: the outermost run and the current (possibly nested) scope."""

    run_id: str
    """Id of the outermost run: the trace root shared by everything it starts."""
    scope_id: str
    """Id of the current scope."""


@dataclass(frozen=True, kw_only=True)
class RenderingPolicy:
    """How values are rendered into prompts, tool results and event previews."""

    limits: StepContextLimits
    style: str
    redaction: ContextRedaction

    @classmethod
    def from_configuration(cls, configuration: StepExecutorConfiguration) -> RenderingPolicy:
        return cls(
            limits=configuration.context_limits,
            style=configuration.json_renderer_style,
            redaction=configuration.context_redaction,
        )

    @property
    def counter(self) -> TokenCounter:
        from ..prompting._tokens import BUDGET_COUNTER  # logging (see the note at the top)

        # Always the estimate, never the configured tokenizer: a prompt must not depend on whether a
        # vocabulary can be loaded on this machine (see `_tokens`).
        return BUDGET_COUNTER

    def render(self, value: object, max_tokens: int, *, name: str | None = None) -> str:
        """Bounded, masked JSON-ish text of `value`."""
        if name is not None and self.redaction.hides(name, value):
            return '"' + self.redaction.placeholder + '"'
        from ..prompting._render import render_value  # datetime, decimal, pathlib, urllib (see the note at the top)

        return render_value(
            value, max_tokens=max_tokens, style=self.style, counter=self.counter, redaction=self.redaction
        )

    def preview(self, value: object, *, name: str | None = None) -> str:
        """A short preview for events and displays (one value's token budget)."""
        return self.render(value, self.limits.value_max_tokens, name=name)


@dataclass(kw_only=True, eq=False)
class StepContext:
    """One execution of a Natural block; tools and executors receive it (as pydantic-ai `deps`)."""

    step_id: str
    """`module:line` of the block."""
    invocation_id: str
    """Unique per execution."""
    program: Program
    step_locals: dict[str, object]
    """The variables expressions run against; changed by tools."""
    step_globals: dict[str, object]
    """Module globals (or the notebook namespace) with `__builtins__`."""
    binding_types: dict[str, object]
    """Write binding name -> expected type (`object` when open)."""
    allowed_outcomes: tuple[str, ...]
    raise_types: Mapping[str, type[BaseException]]
    """Exception types a `raise` outcome may name."""
    is_async: bool
    return_type: object
    """Return annotation of the enclosing function (`object` when none)."""
    execution_context: ExecutionContext
    rendering: RenderingPolicy
    parent: StepContext | None = None
    tools: Mapping[str, ToolDefinition] = field(default_factory=dict)
    """User tools of the enclosing scopes, handed over when the step was built."""
    outcome_schema: Mapping[str, object] = field(default_factory=dict)
    """JSON schema of the outcome object this step may end with (its allowed kinds and raise types)."""
    tool_scope: ToolScope = field(default_factory=_new_tool_scope)
    """Tools registered while this step runs (the innermost scope)."""
    resolution: Resolution | None = None
    """Set when the outcome has been checked and evaluated."""
    usage: StepUsage | None = None
    """What the step spent, once the executor knows (set for failed and interrupted steps too)."""
    model_round: int = 0
    """Which model response is being processed (kept up to date by the executor)."""
    tool_error_round: int | None = None
    """The model round in which a tool call last failed."""
    inherited: dict[str, int] = field(default_factory=dict)
    """Names that came only from the parent step, with the identity of their value then: such a value is
    not committed unless this step replaced it."""
    outcome_problem: str | None = None
    """Why the latest outcome was rejected (reported if the model runs out of retries)."""
    reminded_unset: bool = False
    """Whether the model was already told, once, that a `pass` left write bindings unset."""
    watch: Any = None
    """What the executor notes of the model's responses while it runs the step (a `model._watch.StepWatch`,
    read by the budget gate; typed loosely because the step sits below the model's side)."""
    handover: Any = None
    """A first round made without the agent and handed to it (a `model._direct.Handover`: its tool results and retry)."""
    module_namespace: bool = False
    """Whether `step_locals` are a module's namespace (a notebook cell's; see `Frame.module_namespace`)."""
    implicit_references: Mapping[str, object] = field(default_factory=dict)
    """Names the enclosing scopes offer the model (`nighthawk.scope(implicit_references=...)`); they are in
    `step_globals` too, and the prompt lists them with the globals the block mentions."""

    def global_references(self) -> tuple[str, ...]:
        """The names the globals summary lists: those the block mentions, then the implicit references."""
        mentioned = self.program.references
        return mentioned + tuple(name for name in self.implicit_references if name not in mentioned)

    def validate_binding(self, name: str, value: object) -> object:
        """Validate a value assigned to a bare name against its write binding's type.

        Raises:
            ToolBoundaryError: `invalid_input` when the value does not fit; `internal` when the type cannot be
                checked at all (not something the model can fix by sending another value).
        """
        from ._boundary import ToolBoundaryError  # with validation (see the note at the top)
        from ._validation import ValidationSetupError, type_label, validate_value

        expected = self.binding_types.get(name, object)
        try:
            return validate_value(expected, value)
        except ToolValidationError as exc:
            raise ToolBoundaryError(
                "invalid_input",
                f"cannot assign {name!r}: {exc}",
                f"Assign a value of type {type_label(expected)} to {name!r}; nothing was stored.",
            ) from exc
        except ValidationSetupError as exc:
            raise ToolBoundaryError("internal", f"cannot assign {name!r}: {exc}", "Report this; nothing was stored.") from exc

    def validate_bindings(self, bindings: Mapping[str, object]) -> dict[str, object]:
        """Validate names bound with `:=` like assignments; all of them fit or none is stored."""
        return {name: self.validate_binding(name, value) for name, value in bindings.items()}

    def unset_writes(self) -> tuple[str, ...]:
        """Write bindings with no value at all: unbound before the step and never assigned in it."""
        return tuple(name for name in self.program.writes if name not in self.step_locals)

    def committable(self) -> dict[str, object]:
        """Write bindings to commit: set in this step, or present in the frame it started from."""
        return {
            name: value
            for name in self.program.writes
            if name in self.step_locals
            and self.inherited.get(name) != id(value := self.step_locals[name])
        }

    def note_tool_error(self) -> None:
        """Remember that a tool call failed in this model round: an outcome sent beside it must wait."""
        self.tool_error_round = self.model_round


_current_step: ContextVar[StepContext | None] = ContextVar("nighthawk_current_step", default=None)


def get_current_step_context() -> StepContext:
    """Return the step of the Natural block being executed.

    Raises:
        NighthawkError: No Natural block is executing.
    """
    step = _current_step.get()
    if step is None:
        raise NighthawkError("no Natural block is executing: `get_current_step_context()` works only inside a step")
    return step


def current_step() -> StepContext | None:
    """The executing step, if any (the parent of a step about to start)."""
    return _current_step.get()


@contextmanager
def activate(step: StepContext) -> Iterator[StepContext]:
    """Make `step` the current step inside the `with` block."""
    token = _current_step.set(step)
    try:
        yield step
    finally:
        _current_step.reset(token)


def allowed_outcomes(program: Program, frame: Frame) -> tuple[str, ...]:
    """Outcome kinds the block may end with: the syntactic cap minus what frontmatter denies."""
    cap = OUTCOME_KINDS if frame.in_loop else tuple(k for k in OUTCOME_KINDS if k not in ("break", "continue"))
    allowed = tuple(kind for kind in cap if kind not in program.denied)
    if not allowed:
        raise NaturalParseError(
            "frontmatter `deny` leaves no outcome this block may end with", filename=frame.filename, line=frame.line
        )
    return allowed


def _raise_types(
    step_locals: Mapping[str, object], globals_: Mapping[str, object], references: tuple[str, ...], words: tuple[str, ...]
) -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {name: getattr(builtins, name) for name in _BUILTIN_RAISE_TYPES}
    for word in words:
        named = getattr(builtins, word, None)
        if isinstance(named, type) and issubclass(named, Exception):
            found[word] = named
    candidates = [(name, step_locals[name]) for name in step_locals if not name.startswith("_")]
    candidates += [(name, globals_[name]) for name in references if name in globals_ and name not in step_locals]
    for _, value in candidates:
        if isinstance(value, type) and issubclass(value, Exception):
            found[value.__name__] = value  # the model names the type, whatever variable holds it
    return dict(sorted(found.items()))


def build_step(
    program: Program,
    frame: Frame,
    *,
    execution_context: ExecutionContext,
    configuration: StepExecutorConfiguration,
    tools: Mapping[str, ToolDefinition] | None = None,
    implicit_references: Mapping[str, object] | None = None,
) -> StepContext:
    """Build the step for one execution of a block in `frame` (spec order of the state layers).

    `tools` are the user tools of the enclosing scopes; the caller hands them over, and the executor offers
    them with those the step itself registers. `implicit_references` (from the enclosing scopes) are laid
    over the globals.
    """
    from ._outcome_schema import outcome_schema  # json schemas (see the note at the top)
    from ._validation import infer_binding_type

    parent = current_step()
    step_locals: dict[str, object] = dict(parent.step_locals) if parent is not None else {}
    own_names = frame.python_locals.keys() | frame.read_values.keys()
    inherited = {name: id(value) for name, value in step_locals.items() if name not in own_names}
    step_locals.update(frame.python_locals)
    step_locals.update(frame.read_values)
    step_globals = frame.python_globals
    if "__builtins__" not in step_globals:
        step_globals = {**step_globals, "__builtins__": builtins}
    if implicit_references:
        # A copy: the scope's names must not leak into the module or notebook namespace.
        step_globals = {**step_globals, **implicit_references}
    binding_types: dict[str, Any] = {}
    for name in program.writes:
        declared = frame.binding_types.get(name, object)
        binding_types[name] = infer_binding_type(declared, step_locals.get(name)) if frame.infer_types else declared
    allowed = allowed_outcomes(program, frame)
    references = program.references + tuple(implicit_references or ())
    raise_types = _raise_types(step_locals, step_globals, references, program.words)
    return StepContext(
        step_id=frame.step_id,
        invocation_id=uuid.uuid4().hex,
        program=program,
        step_locals=step_locals,
        step_globals=step_globals,
        binding_types=binding_types,
        allowed_outcomes=allowed,
        raise_types=raise_types,
        is_async=frame.is_async,
        return_type=frame.return_type,
        execution_context=execution_context,
        rendering=RenderingPolicy.from_configuration(configuration),
        parent=parent,
        inherited=inherited,
        tools=dict(tools or {}),
        outcome_schema=outcome_schema(allowed, tuple(raise_types)),
        implicit_references=dict(implicit_references or {}),
        module_namespace=frame.module_namespace,
    )
