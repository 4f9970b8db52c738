"""Exceptions raised by Nighthawk.

Every exception the runtime raises on its own account derives from `NighthawkError`::

    NighthawkError                  a runtime precondition failed (no executor, no active step, ...)
    ├── NaturalParseError           a Natural block, its bindings or its frontmatter could not be read
    ├── ModelConfigurationError     the model cannot be used as set up (a missing API key, an unknown provider)
    ├── ExecutionError              a Natural block ran but did not end in a valid outcome
    │   ├── BudgetExceededError     a step or cell budget (requests, tokens, cost, wall time) ran out
    │   ├── OversightRejectedError  an oversight hook stopped the step (a rejected commit, an ask that failed)
    │   └── ReplayMissError         a replay store has no answer for a request
    ├── OperationRefusedError       a runtime policy refused what model-written code tried (also a PermissionError)
    ├── MapItemError                an item of `nighthawk.map` failed (the item's exception is its cause)
    │   └── MapStoppedError         a map stopped: its model requests kept failing for a cause common to all items
    ├── ToolEvaluationError         an expression evaluated by `nh_eval`/`nh_assign` raised
    ├── ToolValidationError         a value assigned by `nh_assign` does not fit the binding's type
    ├── ToolRegistrationError       a user tool has a bad name, clashes with another one, or has no usable schema
    └── StepAbortedError            user code run by a step raised SystemExit, GeneratorExit, CancelledError, ...
        └── IsolationError          an isolated step's child ended, crashed or was killed, or could not be walled
            └── IsolationUnavailableError  this system cannot wall a child (no Landlock, seccomp or pid namespace)

A `raise` outcome is not a Nighthawk error: the exception type the model names is raised as is.
Python's own `NameError`/`UnboundLocalError` surface unchanged when a read binding cannot be resolved.

In IPython a Nighthawk error shows as a short message (`_render_traceback_`); the whole cause chain of the
last failed block stays available through `last_error()` (and `%nighthawk traceback` in a notebook).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._report import short_traceback

__all__ = [
    "BudgetExceededError",
    "ExecutionError",
    "IsolationError",
    "IsolationUnavailableError",
    "MapItemError",
    "MapStoppedError",
    "ModelConfigurationError",
    "NaturalParseError",
    "NighthawkError",
    "OperationRefusedError",
    "OversightRejectedError",
    "ReplayMissError",
    "StepAbortedError",
    "ToolEvaluationError",
    "ToolRegistrationError",
    "ToolValidationError",
    "last_error",
    "name_uncommitted",
    "not_committed",
    "record_error",
]

_last_error: BaseException | None = None


class NighthawkError(Exception):
    """Base class of every Nighthawk exception; raised itself when a runtime precondition fails."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for this error: the message and the user's own frames, not the cause chain."""
        return short_traceback(self)


class NaturalParseError(NighthawkError):
    """A Natural block, its bindings or its frontmatter could not be parsed (the fault is in the source)."""

    def __init__(self, message: str, *, filename: str | None = None, line: int | None = None) -> None:
        self.filename = filename
        self.line = line
        where = f"{filename}:{line}: " if filename and line else (f"{filename}: " if filename else "")
        super().__init__(f"{where}{message}")


class ModelConfigurationError(NighthawkError):
    """The model in force cannot be used as set up: its API key is missing from the environment, its
    `provider:model` string names a provider (or SDK) that is not there, or a coding agent's program, SDK or
    settings are missing or refused. Raised before any request is sent; the fault is in the setup, not in
    the runtime, the program or the model."""


class ExecutionError(NighthawkError):
    """A Natural block did not end in a valid outcome (the fault is the model's or the provider's)."""


class BudgetExceededError(ExecutionError):
    """A step or cell budget ran out; the step stopped and committed none of its bindings."""

    def __init__(self, *, level: str, budget: str, limit: float, reached: float) -> None:
        self.level = level
        """`step` or `cell`: which budget was hit."""
        self.budget = budget
        """The bounded figure: `requests`, `total_tokens`, `cost_usd` or `wall_time_s`."""
        self.limit = limit
        self.reached = reached
        """The figure when the step stopped (at least `limit`)."""
        self.partial: object = None
        """When it stopped a `nighthawk.map`: the map's results so far (a `MapResult`, `None` where an item
        had not finished)."""
        super().__init__(
            f"the {level} budget `{budget}` of {_figure(budget, limit)} was reached ({_figure(budget, reached)}); "
            f"{not_committed()}. {_RAISE_IT[level].format(budget=budget)}"
        )


_RAISE_IT = {
    "step": "Raise it with `StepExecutorConfiguration(step_budget=UsageBudget({budget}=...))` "
    "(in a notebook: `%nighthawk limits step.{budget}=...`).",
    "cell": "Raise it with `nighthawk.budget({budget}=...)` "
    "(in a notebook: `%nighthawk limits cell.{budget}=...` or `%%natural --budget {budget}=...`).",
}


def _figure(budget: str, value: float) -> str:
    match budget:
        case "cost_usd":
            return f"${value:.4f}"
        case "wall_time_s":
            # Hundredths tell the time that passed from the limit (`1.0 s` reached as `1.02 s`).
            text = f"{value:.2f}"
            return f"{text[:-1] if text.endswith('0') else text} s"
        case _:
            return f"{int(value):,}"


class OversightRejectedError(ExecutionError):
    """An oversight hook (`nighthawk.oversight`) stopped the step: it rejected the commit, or the confirm mode
    could not ask the person; none of the step's bindings was committed."""


class OperationRefusedError(NighthawkError, PermissionError):
    """A runtime policy (`nighthawk.oversight.read_only()`, `no_network()`) refused an operation of
    model-written code before it happened: a file change, a process, a thread, a signal or a socket.

    A `PermissionError`, so code that handles one (importlib writing a `.pyc`, a library's fallback) goes on.
    """


class ReplayMissError(ExecutionError):
    """In `replay` mode, the store has no answer for a request (the prompt, data, tools or settings changed)."""


class ToolEvaluationError(NighthawkError):
    """An expression evaluated inside `nh_eval` or `nh_assign` raised."""


class ToolValidationError(NighthawkError):
    """A value assigned with `nh_assign` could not be validated against the binding's type."""


class ToolRegistrationError(NighthawkError):
    """A user tool could not be registered: invalid name, a name clash without `overwrite=True`, a first
    parameter that cannot receive the run context, or parameters pydantic-ai cannot build a schema for."""


class StepAbortedError(NighthawkError):
    """User code run by a step raised `SystemExit`, `GeneratorExit` or `CancelledError` (or `KeyboardInterrupt`
    off the main thread): the step ends at once instead of handing the model an error to work around."""


class IsolationError(StepAbortedError):
    """The child process an isolated step runs the model's code in ended, crashed or was killed (or ran out of
    its memory, CPU time or wall time): the step ends, the kernel and its namespace are as they were."""


class IsolationUnavailableError(IsolationError):
    """`isolated()` cannot wall a child here (not Linux, no Landlock or seccomp, no pid namespace): it refuses
    to run rather than fall back to the in-process guard."""


class MapItemError(NighthawkError):
    """An item of `nighthawk.map(..., on_error="raise")` failed; the map stopped (its exception is the cause)."""

    def __init__(self, message: str, *, index: int, partial: object) -> None:
        self.index = index
        """The failed item's position in the input."""
        self.partial = partial
        """The map's results so far (a `MapResult`; `None` where an item had not finished)."""
        super().__init__(message)


class MapStoppedError(MapItemError):
    """A `nighthawk.map` stopped because its model requests kept failing for a reason that is not about the
    item (no connection, a refused key, an unknown model, the same failure over and over); whatever
    `on_error` says. Its cause is the exception of the item that stopped it (`index`)."""

    def __init__(self, message: str, *, cause: str, affected: int, index: int, partial: object) -> None:
        self.cause = cause
        """What failed, in words (`nothing listens at the provider's address (connection refused)`)."""
        self.affected = affected
        """How many items failed this way before the map stopped (0, with `index` 0, when it stopped before
        sending anything: a batch map whose provider refuses the key or cannot be reached)."""
        super().__init__(message, index=index, partial=partial)


def not_committed(writes: Sequence[str] | None = None) -> str:
    """What a step that failed or stopped left behind, in the words every such message uses: which bindings
    it did not commit (`writes`, the block's write bindings; `None` while they are not known yet), and that
    what it changed in place stays changed."""
    if writes is None:
        kept = "no binding was committed"
    elif not writes:
        kept = "the block has no write binding to commit"
    else:
        kept = f"{', '.join(f'`{name}`' for name in writes)} {'was' if len(writes) == 1 else 'were'} not committed"
    return f"{kept}; changes made in place to objects (such as `items.append(...)`) are not undone"


_NAMED = "_nighthawk_not_committed"
"""Attribute of an error whose message says `not_committed(...)`: the sentence as it stands."""


def name_uncommitted(error: BaseException, writes: Sequence[str]) -> None:
    """Let `error`'s message name the bindings of the block it leaves (`writes`), when it says that a step
    committed nothing. Called by every block the error passes through, so the outermost one, whose bindings
    the caller sees, is named last."""
    if not isinstance(error, NighthawkError) or not error.args or not isinstance(error.args[0], str):
        return
    said = getattr(error, _NAMED, not_committed())
    if said not in error.args[0]:
        return
    named = not_committed(writes)
    error.args = (error.args[0].replace(said, named), *error.args[1:])
    setattr(error, _NAMED, named)


def record_error(error: BaseException) -> None:
    """Remember `error` as the last failure of a Natural block (see `last_error`)."""
    global _last_error
    _last_error = error


def last_error() -> BaseException | None:
    """The exception of the last Natural block that failed in this process, with its whole cause chain.

    Errors are shown short (the message, not the frames inside the runtime and the model library); format
    this one with `traceback.print_exception(nighthawk.last_error())` to see everything.
    """
    return _last_error
