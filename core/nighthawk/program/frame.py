"""Stage 2, the frame: where a Natural block executes.

Both doors build a `Frame`: the decorator from the running function's locals, the `%%natural` cell magic
from the notebook namespace. Everything after this stage is shared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Frame"]


@dataclass(frozen=True, kw_only=True)
class Frame:
    """The Python side of a block: its variables, its syntactic context and its declared types."""

    python_locals: Mapping[str, object]
    """The caller's local variables when the block starts (a snapshot; writes go through the commit)."""
    python_globals: dict[str, object]
    """Module globals of the function (the notebook namespace for a cell)."""
    read_values: Mapping[str, object]
    """Values of the block's read bindings, resolved with Python's own scoping rules."""
    in_loop: bool
    """Whether the block sits inside a `for`/`while` body (allows `break` and `continue`)."""
    binding_types: Mapping[str, object]
    """Declared types of write bindings (`object` or absent when undeclared)."""
    return_type: object
    """Return annotation of the enclosing function; `object` when there is none (a cell)."""
    is_async: bool
    """Whether the enclosing function is a coroutine function (returned awaitables are awaited)."""
    step_id: str
    """`module:line` identity of the block."""
    infer_types: bool = True
    """Whether an unannotated write binding takes the type of its initial value (functions: yes; notebook
    cells: no, since rebinding a notebook variable to another type is ordinary notebook Python)."""
    module_namespace: bool = False
    """Whether the locals are a module's namespace standing in for a function's (a notebook cell's): the
    prompt then ranks them (what the program mentions, the user's data, then imports in one line)."""
    filename: str | None = None
    line: int | None = None
    parameters: tuple[str, ...] = ()
    """Which of the locals are the function's parameters (none for a cell): the step's code binds those it
    reads to the call's arguments (`transcript._local_sources`)."""
