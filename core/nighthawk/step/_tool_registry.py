"""User tools: the `@nighthawk.tool` decorator and the nested scopes that hold what it registers.

A scope (global, run, scope or step) is pushed by whoever opens it; the executor offers the tools visible
when the step runs. Nothing here knows about steps or models.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from ..errors import ToolRegistrationError
from ._tool_signature import check_tool_signature

__all__ = ["ToolDefinition", "ToolScope", "push_tool_scope", "tool", "visible_tools"]

_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, kw_only=True)
class ToolDefinition:
    """A user tool: a callable whose first parameter receives the pydantic-ai `RunContext[StepContext]`."""

    name: str
    function: Callable[..., Any]
    description: str | None
    metadata: Mapping[str, Any] | None


@dataclass(kw_only=True)
class ToolScope:
    """Tools registered while a scope (global, run, scope or step) is innermost."""

    tools: dict[str, ToolDefinition] = field(default_factory=dict)

    def register(self, definition: ToolDefinition, *, overwrite: bool) -> None:
        if definition.name in self.tools and not overwrite:
            raise ToolRegistrationError(
                f"a tool named {definition.name!r} is already registered in this scope; "
                "pass `overwrite=True` or choose another `name=`"
            )
        self.tools[definition.name] = definition


_GLOBAL_SCOPE = ToolScope()
_scopes: ContextVar[tuple[ToolScope, ...]] = ContextVar("nighthawk_tool_scopes", default=())


@contextmanager
def push_tool_scope(scope: ToolScope) -> Iterator[ToolScope]:
    """Make `scope` the innermost tool scope inside the `with` block."""
    token = _scopes.set((*_scopes.get(), scope))
    try:
        yield scope
    finally:
        _scopes.reset(token)


def visible_tools() -> dict[str, ToolDefinition]:
    """User tools visible now; an inner scope's tool hides an outer one of the same name."""
    visible = dict(_GLOBAL_SCOPE.tools)
    for scope in _scopes.get():
        visible.update(scope.tools)
    return visible


_RESERVED_PREFIX = "nh_"


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    overwrite: bool = False,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Callable[[F], F]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    overwrite: bool = False,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """Register a function as a tool the model can call, in the innermost active scope.

    The function's first parameter receives pydantic-ai's `RunContext[StepContext]` and is hidden from the
    model; the others form the tool's JSON schema. Used bare (`@nighthawk.tool`) or with arguments.

    Args:
        function: The tool, when used without arguments.
        name: Tool name shown to the model; defaults to the function's `__name__`.
        overwrite: Replace a tool of the same name in the same scope instead of raising.
        description: Defaults to the function's docstring.
        metadata: Free-form data attached to the tool definition.

    Raises:
        ToolRegistrationError: Invalid name, a reserved `nh_` name, a clash without `overwrite=True`, a first
            parameter that cannot receive the run context, or parameters pydantic-ai has no schema for.
    """

    def register(func: F) -> F:
        tool_name = name or func.__name__
        if not tool_name.isascii() or not _TOOL_NAME.match(tool_name):
            raise ToolRegistrationError(
                f"invalid tool `name` {tool_name!r}: use ASCII letters, digits and underscores, not starting "
                "with a digit"
            )
        if tool_name.startswith(_RESERVED_PREFIX):
            raise ToolRegistrationError(
                f"tool `name` {tool_name!r} uses the reserved `nh_` prefix of built-in tools; choose another name"
            )
        definition = ToolDefinition(
            name=tool_name,
            function=func,
            description=description if description is not None else inspect.getdoc(func),
            metadata=metadata,
        )
        check_tool_signature(definition.name, func, definition.description)
        scopes = _scopes.get()
        (scopes[-1] if scopes else _GLOBAL_SCOPE).register(definition, overwrite=overwrite)
        return func

    if function is not None:
        return register(function)
    return register

