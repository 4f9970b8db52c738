"""The data of oversight: what a hook is shown, what it may answer, and the pair of hooks a scope holds.

Plain data, below the code that asks the hooks (`_oversee.py` for the tools and the runner) and the
ready-made policies (`_policies.py`), which are hooks themselves. Users reach it through the package face
(`__init__.py`, `nh.oversight`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, Union

from ..step._context import ExecutionContext

__all__ = [
    "Accept",
    "GUARDS_NAME",
    "NOT_ENFORCED",
    "Enforcement",
    "Isolation",
    "Oversight",
    "Refusal",
    "Reject",
    "Rewrite",
    "RuntimeGuard",
    "STEP_MACHINERY",
    "StepCommitDecision",
    "StepCommitHook",
    "StepCommitProposal",
    "ToolCall",
    "ToolCallDecision",
    "ToolCallHook",
    "combine",
    "label",
]


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """A tool call the model asked for, shown to `inspect_tool_call` before it runs."""

    tool_name: str
    """`nh_eval`, `nh_assign` or the name of a user tool."""
    argument_name_to_value: Mapping[str, object]
    """The arguments as the model sent them (`{"expression": ...}` for `nh_eval`)."""
    step_id: str
    """`module:line` of the block (`In[3]:2` in a notebook)."""
    execution_context: ExecutionContext
    processed_natural_program: str
    """The program text the model was given."""
    step_locals: Mapping[str, object]
    """A read-only view of the variables the call would run against."""
    step_globals: Mapping[str, object]
    """A read-only view of the module globals (the notebook namespace) behind them."""


@dataclass(frozen=True, kw_only=True)
class StepCommitProposal:
    """What a step is about to commit, shown to `inspect_step_commit` after its outcome was checked."""

    proposed_binding_name_to_value: Mapping[str, object]
    """The write bindings that would be committed, by name."""
    proposed_step_outcome: object
    """The outcome the step ends with (`.kind` is `pass`, `return`, `break` or `continue`)."""
    proposed_return_value: object
    """The value a `return` outcome returns (`None` for other kinds)."""
    output_binding_names: tuple[str, ...]
    """Every write binding of the block: the names a `Rewrite` may set."""
    step_id: str
    execution_context: ExecutionContext
    processed_natural_program: str


@dataclass(frozen=True)
class Accept:
    """Let the call run, or the step commit, as proposed."""

    reason: str | None = None


@dataclass(frozen=True)
class Reject:
    """Refuse: a tool call does not run and the model reads `reason`; a step commits nothing and raises."""

    reason: str


@dataclass(frozen=True, kw_only=True)
class Rewrite:
    """Commit other values for some write bindings (checked against their types like any assigned value)."""

    rewritten_binding_name_to_value: Mapping[str, object]
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class RuntimeGuard:
    """What a policy refuses model-written code while it runs, checked on Python's audit events.

    Plain data, so that an oversight sent to another process (`nighthawk.ray`) is enforced there too. Every
    guard refuses starting processes, threads and signals: they would run beyond its reach.
    """

    policy: str
    """The policy's name, shown in refusals (`read_only`, `no_network`)."""
    files: bool = False
    """Refuse changes to the file system (outside `writable`)."""
    writable: tuple[str, ...] = ()
    """Absolute, resolved directories inside which files may change."""
    network: bool = False
    """Refuse sockets and name look-ups (but those `allow` names)."""
    allow: tuple[str, ...] = ()
    """`host` or `host:port` entries the network may reach (`127.0.0.1:8000`, `localhost`, `[::1]:8000`)."""


@dataclass(frozen=True)
class Refusal:
    """One operation a runtime guard refused."""

    policy: str
    message: str


@dataclass(eq=False)
class Enforcement:
    """The runtime guards enforced in one region of model-written code, and what they refused there."""

    guards: tuple[RuntimeGuard, ...]
    refusals: list[Refusal] = field(default_factory=list)
    mode: Literal["evaluation", "handling", "machinery", "off"] = "evaluation"
    """`evaluation`: the model's code runs here, all of it is held. `handling`: Nighthawk looks at a value
    the model made (scans, validates, renders it): held, but for the user's own functions it calls (a
    validator, a `__repr__`). `machinery`: a step's own work, started by guarded model code: nothing is
    held but the functions the model made, called from it. `off`: nothing is held (the guard's own work)."""


GUARDS_NAME = "__nighthawk_guards__"
"""The name under which guarded model code's namespace holds its guards: the globals of every function it
makes, which stay held to them wherever they run."""

NOT_ENFORCED = Enforcement(guards=(), mode="off")
"""Set on purpose where nothing is enforced though model code runs further up (a look-up of the guard's
own): unlike an unset value, it also overrides the enforcement of the thread."""

STEP_MACHINERY = Enforcement(guards=(), mode="machinery")
"""Set around the work of a step that guarded model code started (a natural function it called): that work
is Nighthawk's and the user's, but a function the model made is still held to its guards when it runs
there (found on the stack above the step's own frames)."""


@dataclass(frozen=True, kw_only=True)
class Isolation:
    """The walls of an isolated step's child process (`nighthawk.oversight.isolated`)."""

    writable: tuple[str, ...] = ()
    """Absolute, resolved folders the child may change files in (besides a private temporary folder)."""
    network: bool = False
    """Whether the child may open network sockets (Unix sockets it makes itself are always allowed)."""
    memory_mb: int = 4096
    """Address space the child may add to what it shares with the kernel at the fork, in MiB."""
    cpu_seconds: int = 600
    """CPU time the child may use over the step."""
    processes: int = 300
    """Processes the child may have at once (itself included); the kernel bounds no lower than 300."""
    open_files: int = 1024
    """Descriptors the child may hold open."""
    file_mb: int | None = 1024
    """How far into a file the child (and every program it starts) may write, in MiB (`None`: no bound)."""


ToolCallDecision: TypeAlias = Union[Accept, Reject]  # noqa: UP007 - a runtime union users annotate with
StepCommitDecision: TypeAlias = Union[Accept, Reject, Rewrite]  # noqa: UP007
ToolCallHook: TypeAlias = Callable[[ToolCall], "ToolCallDecision | Awaitable[ToolCallDecision]"]
StepCommitHook: TypeAlias = Callable[[StepCommitProposal], "StepCommitDecision | Awaitable[StepCommitDecision]"]


@dataclass(frozen=True, kw_only=True)
class Oversight:
    """The hooks a scope puts in force (`nighthawk.scope(oversight=...)`), and the guards enforced while the
    model's code runs; any of them may be left out.

    A hook is a function or a coroutine function. A sync hook runs on the thread that started the block,
    like every other piece of user code a step runs, so it may block on `input()`.
    """

    inspect_tool_call: ToolCallHook | None = None
    """Called before every tool call; answers `Accept()` or `Reject(reason)`."""
    inspect_step_commit: StepCommitHook | None = None
    """Called before a step commits; answers `Accept()`, `Reject(reason)` or `Rewrite(...)`."""
    runtime: tuple[RuntimeGuard, ...] = ()
    """What model-written code is refused while it runs, enforced on Python's audit events (`read_only()` and
    `no_network()` set it)."""
    isolation: Isolation | None = None
    """When set, the model's code of each step runs in a walled child process (`isolated()`)."""
    name: str = ""
    """How events and spans name this oversight (default: the hook's function name)."""
    parts: tuple[Oversight, ...] = field(default=(), repr=False)
    """The oversights `combine` joined, asked in order (empty for a plain one)."""

    def __post_init__(self) -> None:
        # Checked here, not at the first tool call: a wrong hook would otherwise end a step halfway through.
        for name in ("inspect_tool_call", "inspect_step_commit"):
            hook = getattr(self, name)
            if hook is not None and not callable(hook):
                hint = (
                    "pass that oversight to `nighthawk.scope(oversight=...)` itself, or join several with `combine(...)`"
                    if isinstance(hook, Oversight)
                    else "pass a function that takes one argument and returns a decision"
                )
                raise TypeError(f"`{name}` must be a function or None, got {hook!r:.80}; {hint}")
        if not isinstance(self.runtime, tuple) or not all(isinstance(guard, RuntimeGuard) for guard in self.runtime):
            raise TypeError(
                f"`runtime` must be a tuple of `RuntimeGuard`, got {self.runtime!r:.80}; take the guards of a ready "
                "policy, `read_only().runtime`, or `combine` policies"
            )

    def chain(self) -> tuple[Oversight, ...]:
        """The plain oversights this one stands for, in the order they are asked."""
        return tuple(part for own in self.parts for part in own.chain()) if self.parts else (self,)


def combine(*oversights: Oversight) -> Oversight:
    """One oversight that asks each of `oversights` in turn.

    A tool call runs only if every hook accepts it; before a commit, each hook sees the values the previous
    ones left (rewrites included), and the first rejection stops the step. The runtime guards of all of
    them are enforced together.
    """
    for oversight in oversights:
        if not isinstance(oversight, Oversight):
            raise TypeError(
                f"`combine` takes `Oversight` values, got {oversight!r:.80}; build the ready ones by calling them, "
                "`read_only()` or `allow_tools(...)`"
            )
    parts = tuple(part for oversight in oversights for part in oversight.chain())
    runtime = tuple(dict.fromkeys(guard for part in parts for guard in part.runtime))
    walls = tuple(dict.fromkeys(part.isolation for part in parts if part.isolation is not None))
    if len(walls) > 1:
        raise TypeError(
            "`combine` takes one `isolated(...)` at most: a step runs in one child; name every writable folder in it"
        )
    return Oversight(
        name="+".join(label(part) for part in parts), runtime=runtime, parts=parts, isolation=walls[0] if walls else None
    )


def label(oversight: Oversight) -> str:
    """The name an oversight goes by in events: its `name`, or its hooks' function names."""
    if oversight.name:
        return oversight.name
    hooks = (oversight.inspect_tool_call, oversight.inspect_step_commit)
    names = dict.fromkeys(getattr(hook, "__qualname__", type(hook).__name__) for hook in hooks if hook is not None)
    return "+".join(names) or "oversight"
