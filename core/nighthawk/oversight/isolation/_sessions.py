"""Which steps run their model code in an isolated child, and what a tool call there answers.

Below the tools and the outcome, which look a step's child up here; `_parent.py` registers it for the
step's life. A child is reached through the `Session` protocol, so that this module imports nothing at run
time. The functions the child runs the model's code with are the kernel's own (`StepCode`), handed in by the
runner: the isolation serves the tools and the outcome without importing them (they import it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from ...step._context import StepContext
    from ...step._outcome_kinds import Resolution

__all__ = ["Rendered", "Session", "StepCode", "end", "forget_all", "register", "session_of"]


@dataclass(frozen=True, kw_only=True)
class StepCode:
    """What runs the model's code of a step, in the kernel and in its isolated child alike."""

    evaluate: Callable[[StepContext, str], Awaitable[object]]
    """An `nh_eval` expression's value."""
    assign: Callable[[StepContext, str, str], Awaitable[object]]
    """An `nh_assign`: the target path, the expression; the value assigned."""
    render: Callable[[StepContext, object], tuple[str, str, bool]]
    """A tool call's value as the model reads it: the envelope, the events' preview, whether it was awaited."""
    resolve: Callable[[object, StepContext], Awaitable[Resolution]]
    """An outcome checked and resolved (its return expression evaluated)."""


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """A tool call's result, rendered in the child (the envelope the model reads, the events' preview)."""

    envelope: str
    preview: str
    awaited: bool = False


class Session(Protocol):
    """The child of one isolated step."""

    async def tool(self, tool_name: str, arguments: Mapping[str, object]) -> Rendered: ...

    async def returned(self, outcome: object) -> tuple[object, dict[str, object], bool]: ...

    async def aclose(self) -> None: ...

    def close(self) -> None: ...


_sessions: WeakKeyDictionary[object, Session] = WeakKeyDictionary()


def session_of(step: object) -> Session | None:
    """The child running `step`'s model code, or `None` when the step is not isolated."""
    return _sessions.get(step) if _sessions else None


def register(step: object, session: Session) -> None:
    _sessions[step] = session


async def end(step: object) -> None:
    """End `step`'s child, if it has one."""
    session = _sessions.pop(step, None)
    if session is not None:
        try:
            await session.aclose()
        finally:
            session.close()  # a no-op once closed; a cancelled wait still kills and reaps it


def forget_all() -> None:
    """In the child: its step's model code runs here, not in a child of its own (the kernel's sessions,
    copied by the fork, are not the child's)."""
    _sessions.clear()
