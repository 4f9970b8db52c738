"""Where a natural function's locals can be taken from in the notebook, for the code of its step.

A function's step reads its parameters (`xs.sort()`), which the notebook does not have: the step's code
(`_as_python`) binds them first, from what is said here when the block starts. A local holding the very
object a notebook name holds is that name (`xs = data`, so code that changes it changes the notebook's, as
the step did); a number, a short string or a small list of them is written as its literal; anything else is
named by its type only, and the code says so rather than guess. Only builtin types are written as literals
(their `repr` runs no user code), and the text goes out in `StepStarted`, scrubbed of secrets like any event.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Collection, Mapping

from ..events import LocalSource

__all__ = ["local_sources"]

_LITERAL_ROOM = 80
"""Longest literal written into the code (longer values are named by their type)."""
_ITEMS = 16
"""Most items of a list, tuple, set or dict written as a literal."""
_SHARED = (int, bool, type(None))
"""Types written as literals even when a notebook name holds the value: Python shares small ints, `True` and
`None` between all names, so a name holding the same object says nothing about where the value came from."""


def local_sources(
    python_locals: Mapping[str, object], parameters: Collection[str], notebook: Mapping[str, object] | None = None
) -> tuple[LocalSource, ...]:
    """Where each of `python_locals` can be taken from by code run in `notebook`.

    Args:
        python_locals: The function's locals when the block starts.
        parameters: Which of them are parameters.
        notebook: The namespace the code runs in; by default `__main__`'s (a notebook's, or a script's).
    """
    if notebook is None:
        main = sys.modules.get("__main__")
        notebook = vars(main) if main is not None else {}
    holders: dict[int, str] | None = None  # made once, and only when a local needs looking up
    found: list[LocalSource] = []
    for name, value in python_locals.items():
        literal = _literal(value)
        holder = None
        if literal is None or type(value) not in _SHARED:
            if notebook.get(name) is value:  # the notebook's own name: the code needs no binding
                holder = name
            else:
                holders = _holders(notebook) if holders is None else holders
                holder = holders.get(id(value))
        parameter = name in parameters
        if holder is not None:
            found.append(LocalSource(name=name, parameter=parameter, source="name", expression=holder))
        elif literal is not None:
            found.append(LocalSource(name=name, parameter=parameter, source="literal", expression=literal))
        else:
            found.append(LocalSource(name=name, parameter=parameter, source="unnamed", type_name=type(value).__name__))
    return tuple(found)


def _holders(notebook: Mapping[str, object]) -> dict[int, str]:
    """The first of the user's names (not `_`-prefixed: IPython's output history) holding each object."""
    holders: dict[int, str] = {}
    for name, value in list(notebook.items()):  # a copy: another thread may add a name meanwhile
        if not name.startswith("_") and name.isidentifier():
            holders.setdefault(id(value), name)
    return holders


def _literal(value: object) -> str | None:
    """`value` as a Python literal that gives it back, when it is small and made of builtin types only."""
    if not _plain(value, depth=0):
        return None
    text = repr(value)
    if len(text) > _LITERAL_ROOM:
        return None
    try:
        back = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return text if type(back) is type(value) and back == value else None


def _plain(value: object, *, depth: int) -> bool:
    """Whether `value` is a builtin scalar, or a small container of them (two levels at most)."""
    kind = type(value)
    if kind in (str, bytes):
        return len(value) <= _LITERAL_ROOM  # type: ignore[arg-type]
    if kind is int:
        return value.bit_length() <= 256  # type: ignore[attr-defined]  # a huge int's repr is slow, or refused
    if kind in (float, complex, bool, type(None)):
        return True
    if kind in (list, tuple, set, frozenset, dict) and depth < 2 and len(value) <= _ITEMS:  # type: ignore[arg-type]
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)  # type: ignore[union-attr,call-overload]
        return all(_plain(item, depth=depth + 1) for item in items)
    return False
