"""Where a natural function's source text comes from when its blocks are compiled.

A function is read from its file (or notebook cell) once, when it is decorated, and the text is kept. A
natural function defined inside another one is decorated each time the outer one runs, possibly in another
process that received the outer function by value (a Ray actor) and has no file to read: its text is cut
from the text the outer function kept, which is also exactly what the outer function's code was compiled
from (the file may have changed since).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from dataclasses import dataclass

from ..errors import NaturalParseError

__all__ = ["KeptSource", "function_source"]


@dataclass(frozen=True)
class KeptSource:
    """The source an enclosing natural function kept at decoration, and the file line its first line is on."""

    text: str
    first_line: int


def function_source(function: types.FunctionType, enclosing: KeptSource | None) -> str:
    """The dedented source of `function`, decorators included: cut from `enclosing` when it holds the def,
    else read through `inspect`.

    Raises:
        NaturalParseError: Neither holds it.
    """
    if enclosing is not None:
        cut = _cut(function, enclosing)
        if cut is not None:
            return cut
    try:
        return textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError) as exc:
        raise NaturalParseError(
            f"the source of {function.__qualname__!r} is not available, so its Natural blocks cannot be read "
            "(define it in a file or a notebook cell)",
            filename=function.__code__.co_filename,
        ) from exc


def _cut(function: types.FunctionType, enclosing: KeptSource) -> str | None:
    """The lines of the def of `function` in the enclosing source, found by name and first line."""
    # A code object's first line is that of its first decorator, as in the kept text.
    first = function.__code__.co_firstlineno - enclosing.first_line + 1
    for node in ast.walk(ast.parse(enclosing.text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != function.__name__:
            continue
        start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        if start == first and node.end_lineno is not None:
            lines = enclosing.text.splitlines(keepends=True)[start - 1 : node.end_lineno]
            return textwrap.dedent("".join(lines))
    return None
