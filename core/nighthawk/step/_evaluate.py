"""Evaluate model-written Python expressions against step locals and step globals.

`eval(code, globals, locals)` hides `locals` from nested scopes: a lambda, a generator expression or
(before Python 3.12) a comprehension that names a step local raises NameError. Models write such
expressions all the time, so expressions run against one merged namespace instead.

Nothing is written back here: names bound with `:=` are reported in `Evaluation.bindings()`, and the
caller validates them like assignments and stores them only if the whole call succeeds.

Evaluation is split in two synchronous halves around an optional `await`: `start_evaluation` runs the
code (an expression with a top-level `await` yields a coroutine the async caller awaits), and
`Evaluation.bindings()` reads the walrus names once the value is final.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import CodeType

from ..secrets._scrubber import note_expression, note_value

__all__ = ["Evaluation", "clip", "compile_expression", "start_evaluation"]

_MISSING = object()
_CLIP_CHARS = 2000


def clip(text: str, limit: int = _CLIP_CHARS) -> str:
    """`text` cut to about `limit` characters, saying how much was left out (error text stays bounded)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


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
    # Top-level `await` is allowed: such code evaluates to a coroutine the (async) caller awaits.
    return compile(tree, "<nighthawk>", "eval", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), walrus


@dataclass(kw_only=True, eq=False)
class Evaluation:
    """One evaluated expression: its value, the names it bound with `:=`, the warnings it raised."""

    value: object
    """The result; for code with a top-level `await`, the coroutine that computes it (see `awaits`)."""
    awaits: bool
    """Whether `value` is the code's own coroutine, to be awaited before the result exists."""
    namespace: dict[str, object]
    before: dict[str, object]
    """The value each walrus name had before evaluation (`_MISSING` when unbound)."""
    warnings: list[str] = field(default_factory=list)

    def bindings(self) -> dict[str, object]:
        """Names a `:=` actually (re)bound; a walrus that never ran (`False and (y := 1)`) binds nothing."""
        return {
            name: self.namespace[name]
            for name, old in self.before.items()
            if self.namespace.get(name, _MISSING) is not old
        }


def start_evaluation(
    expression: str,
    step_locals: Mapping[str, object],
    step_globals: Mapping[str, object],
    *,
    around: AbstractContextManager[Mapping[str, object] | None] | None = None,
    looking: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> Evaluation:
    """Evaluate `expression` the way Python would if step locals were module-level names.

    Warnings raised while evaluating are recorded in the result instead of printed into the user's output.
    `around` is entered for the evaluation itself only (the oversight's runtime guards), not for the
    bookkeeping before and after it; the names it gives are added to the namespace the code runs in (the
    guards' mark, which the functions the code makes keep as their globals). `looking` is entered inside it
    around the scan of the value for secrets (the guards' mode for Nighthawk's own look at a model-made value).

    Raises:
        SyntaxError: Not a single expression.
        Exception: Whatever the expression raises.
    """
    code, walrus = compile_expression(expression)
    # Before it runs, so that an error message quoting a secret the expression names is scrubbed too.
    derived = note_expression(expression, step_locals, step_globals)
    namespace = dict(step_globals)
    namespace.setdefault("__builtins__", builtins)
    namespace.update(step_locals)
    before = {name: namespace.get(name, _MISSING) for name in walrus}
    # The user's filters still apply (an "error" filter still raises, "ignore" still hides); what would have
    # been printed is recorded instead, for the model to read.
    with warnings.catch_warnings(record=True) as caught:
        with around or nullcontext() as mark:
            namespace.update(mark or {})
            value = eval(code, namespace)  # noqa: S307 - evaluating model expressions is the product (trusted-input model)
            # Still under the guards: scanning the value for secrets calls its methods (`items`, `__iter__`),
            # which the model's code may have set to any function of Python's.
            with looking():
                note_value(value, derived=derived)
    return Evaluation(
        value=value,
        awaits=bool(code.co_flags & inspect.CO_COROUTINE),
        namespace=namespace,
        before=before,
        warnings=[f"{w.category.__name__}: {w.message}" for w in caught],
    )
