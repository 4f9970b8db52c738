"""The second tier of a notebook's locals summary: one short line per name, as a variable explorer shows it.

A notebook holds far more names than a cell is about (`tmp`, `df_tmp`, `preds`, `i`, `j`); the model needs to
know they exist and what they roughly are, not what they hold. Each gets one line of a few tokens: its name,
its type, a shape or a length, and a scalar's value (`sales: DataFrame 5000×8`, `notes: list of 300`,
`threshold: float = 250.0`, `share: (part: float, whole: float) -> float`). The names come most recently
assigned first: IPython's input history (`In`/`_ih`) says which cell last assigned each; names no cell of
the history assigns follow, the last bound first.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence, Sized
from typing import TYPE_CHECKING

from ..program.block import scan_bindings
from ._reprs import array_shape, type_name
from ._summaries import intent_of, signature_text
from ._tables import display_number

if TYPE_CHECKING:
    from ..secrets import ContextRedaction

__all__ = ["recent_first", "short_line"]

_MAX_SIGNATURE_CHARS = 80
_MAX_INTENT_CHARS = 60
_MAX_TEXT_CHARS = 40
_MAX_HISTORY_CELLS = 2_000


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def short_line(name: str, value: object, redaction: ContextRedaction) -> str:
    """The one line of `name` (see the module notes); a sensitive name's value is masked, strings scrubbed."""
    if isinstance(value, type):
        signature = (signature_text(value, _MAX_SIGNATURE_CHARS) or "").removesuffix(f" -> {value.__qualname__}")
        return f"{name}: class{signature}"
    if callable(value):
        signature = signature_text(value, _MAX_SIGNATURE_CHARS)
        intent = intent_of(value)
        note = f"  # {_cut(intent, _MAX_INTENT_CHARS)}" if intent else ""
        return redaction.scrub_text(f"{name}: {signature or '(…)'}{note}")
    kind = type_name(value)
    if redaction.hides(name, value):
        return f"{name}: {kind} = {redaction.placeholder}"
    shown = display_number(value)  # a numpy scalar as its Python number, a float as a table shows it
    if shown is None or isinstance(shown, bool | int | float | complex):
        return f"{name}: {kind} = {shown!r}"
    if isinstance(value, str):
        shown = redaction.scrub_text(_cut(value, _MAX_TEXT_CHARS))
        return f"{name}: str = {shown!r}" + (f" ({len(value)} chars)" if len(value) > _MAX_TEXT_CHARS else "")
    shape = array_shape(value)
    if shape is not None:
        dtype = getattr(value, "dtype", None)  # a DataFrame has one per column: `dtypes`
        size = f"of {shape[0]}" if len(shape) == 1 else "×".join(map(str, shape))
        return f"{name}: {kind} {size}" + (f" {dtype}" if dtype is not None else "")
    if isinstance(value, Sized):
        try:
            return f"{name}: {kind} of {len(value)}"
        except Exception:  # a hostile __len__
            pass
    return f"{name}: {kind}"


def recent_first(names: Sequence[str], history: object) -> list[str]:
    """`names` most recently assigned first (see the module notes); `history` is the namespace's `_ih`."""
    wanted = set(names)
    order: dict[str, None] = {}
    if isinstance(history, list):
        for cell in reversed(history[-_MAX_HISTORY_CELLS:]):
            if isinstance(cell, str):
                order.update(dict.fromkeys(name for name in _assigned(cell) if name in wanted and name not in order))
    return [*order, *(name for name in reversed(names) if name not in order)]


@functools.lru_cache(maxsize=4_096)
def _assigned(source: str) -> tuple[str, ...]:
    """The names a cell's code binds: assignments, loops, `def`, `class`, imports, `with ... as`, the write
    bindings of a `%%natural` cell and the code of other cell magics."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.append(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.extend((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif _is_cell_magic(node):
            magic, body = node.args[0].value, node.args[2].value  # type: ignore[attr-defined]
            found.extend(scan_bindings(body)[1] if magic == "natural" else _assigned(body))
    return tuple(reversed(found))  # the last assignment of a cell first


def _is_cell_magic(node: ast.AST) -> bool:
    """Whether `node` is `get_ipython().run_cell_magic('name', 'line', 'body')`, as IPython writes a cell magic."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run_cell_magic"
        and len(node.args) == 3
        and all(isinstance(arg, ast.Constant) and isinstance(arg.value, str) for arg in node.args)
    )
