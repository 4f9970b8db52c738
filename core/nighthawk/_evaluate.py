"""Evaluate model-written Python expressions against step locals and step globals.

`eval(code, globals, locals)` hides `locals` from nested scopes: a lambda, a generator expression or
(before Python 3.12) a comprehension that names a step local raises NameError. Models write such
expressions all the time, so expressions run against one merged namespace instead, and names bound
with `:=` are copied back into step locals afterwards.
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import MutableMapping
from types import CodeType

__all__ = ["compile_expression", "evaluate"]


@functools.lru_cache(maxsize=512)
def compile_expression(expression: str) -> tuple[CodeType, tuple[str, ...]]:
    """Compile an expression once; also return the names it binds with `:=`.

    Raises:
        SyntaxError: `expression` is not a single Python expression.
    """
    tree = ast.parse(expression.strip(), mode="eval")
    walrus = tuple(
        dict.fromkeys(
            node.target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name)
        )
    )
    return compile(tree, "<nighthawk>", "eval"), walrus


def evaluate(expression: str, step_locals: MutableMapping[str, object], step_globals: dict[str, object]) -> object:
    """Evaluate `expression` the way Python would if step locals were module-level names.

    Raises:
        SyntaxError: Not a single expression.
        Exception: Whatever the expression raises.
    """
    code, walrus = compile_expression(expression)
    namespace = dict(step_globals)
    namespace.setdefault("__builtins__", builtins)
    namespace.update(step_locals)
    value = eval(code, namespace)  # noqa: S307 - evaluating model expressions is the product (trusted-input model)
    for name in walrus:
        step_locals[name] = namespace[name]
    return value
