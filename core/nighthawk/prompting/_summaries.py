"""The locals and globals summaries placed in a step's user prompt.

Each summary is one line per name, in lexicographic order:

* a value: `name: type_name = <bounded JSON-like rendering>`; a sensitive name shows its type and the
  redaction placeholder instead of the value;
* a callable (classes included): `name: (signature)`, optionally followed by `  # intent: <first docstring
  line>` and `  # disambiguation: use name` when another listed callable has the same signature text. A class
  shows its constructor's parameters and returns its own name (`Point: (x: int, y: int) -> Point`);
* a type alias (PEP 695 `type X = ...`, or a subscripted generic such as `list[int]`): `name: type = ...`;
* a module: `name: module`.

Each summary stops at its token and item limits; a final `<snipped>` line then says that entries were left
out, and one INFO record on the `nighthawk` logger says how many.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import logging
import types
import typing
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from ..program.block import SENTINEL
from ._render import render_value
from ._reprs import bounded_repr, type_name

if TYPE_CHECKING:
    from ..secrets import ContextRedaction
    from ._limits import JsonRendererStyle, StepContextLimits
    from ._tokens import TokenCounter

__all__ = [
    "MISSING",
    "SNIPPED_MARKER",
    "Entry",
    "alias_target",
    "build_entry",
    "disambiguate",
    "intent_of",
    "render_entry",
    "render_globals_summary",
    "render_locals_summary",
    "signature_text",
]

SNIPPED_MARKER = "<snipped>"

_logger = logging.getLogger("nighthawk")
_MAX_DEFAULT_CHARS = 40
_MAX_INTENT_CHARS = 160
MISSING = object()
"""What `alias_target` answers for a value that is no type alias."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Entry:
    """One rendered summary line."""

    name: str
    """The bound name."""

    line: str
    """The line without any disambiguation note."""

    signature: str | None
    """The signature text of a callable, compared to find callables that read the same; `None` otherwise."""


class _Literal:
    """Prints as the given text; stands in for defaults and return annotations inside a signature."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max(max_chars - 1, 0)] + "…"


def signature_text(value: object, max_chars: int) -> str | None:
    """Return `(params) -> ret` for a callable, with defaults shortened, or `None` when it has none."""
    try:
        try:
            signature = inspect.signature(value, eval_str=True)  # type: ignore[arg-type]
        except Exception:  # an annotation that names something undefined: keep the string annotations
            signature = inspect.signature(value)  # type: ignore[arg-type]
        # A default is shown by its repr, which for a large object is as large as the object.
        parameters = [
            p if p.default is p.empty else p.replace(default=_Literal(bounded_repr(p.default, _MAX_DEFAULT_CHARS)))
            for p in signature.parameters.values()
        ]
        returns = _Literal(value.__qualname__) if isinstance(value, type) else signature.return_annotation
        text = str(signature.replace(parameters=parameters, return_annotation=returns))
    except Exception:  # ValueError/TypeError for builtins without one; anything from a custom __signature__
        return None
    return _cut(text, max_chars)


def intent_of(value: object) -> str | None:
    """Return the first line of the callable's own docstring when it says what the callable is for."""
    if isinstance(value, functools.partial):
        value = value.func
    if not isinstance(value, type | types.FunctionType | types.MethodType | types.BuiltinFunctionType):
        # A callable instance reports its class's docstring; only a user class's docstring is about it.
        if type(value).__module__ in ("builtins", "functools"):
            return None
    try:
        doc = value.__doc__
    except Exception:
        return None
    if not isinstance(doc, str):
        return None
    lines = [line.strip() for line in doc.strip().splitlines() if line.strip()]
    # A natural function's docstring is its Natural block: the sentinel line says nothing, its program does.
    if lines[:1] == [SENTINEL.strip()]:
        lines = lines[1:]
        if lines[:1] == ["---"] and "---" in lines[1:]:  # frontmatter (`deny: [...]`) comes before the program
            lines = lines[lines.index("---", 1) + 1 :]
    first = lines[0] if lines else ""
    name = getattr(value, "__name__", type(value).__name__)
    # Builtin types and dataclasses document themselves with a signature line (`int([x]) -> integer`,
    # `Point(x: int, y: int)`), which repeats the signature instead of giving an intent.
    if not first or first.startswith(f"{name}("):
        return None
    return _cut(first, _MAX_INTENT_CHARS)


def alias_target(value: object) -> object:
    """Return what a type alias stands for, or `MISSING` when `value` is not an alias."""
    if type(value).__name__ == "TypeAliasType" and hasattr(type(value), "__value__"):
        try:
            return value.__value__  # type: ignore[attr-defined]
        except Exception:  # the alias is evaluated lazily and may name something undefined
            return _Literal("<unresolved>")
    if not isinstance(value, type) and typing.get_origin(value) is not None:
        return value  # list[int], int | None, Optional[str]: the alias is its own best description
    return MISSING


def build_entry(
    name: str,
    value: object,
    *,
    limits: StepContextLimits,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
    placeholder: str | None = None,
) -> Entry:
    """The summary line of one name (see the module notes), with the signature text disambiguation compares."""
    if placeholder is not None:  # an image or document sent beside the prompt: named here, not rendered
        return Entry(name=name, line=f"{name}: {type_name(value)} = {placeholder}", signature=None)
    max_chars = limits.value_max_tokens * 4
    target = alias_target(value)
    if target is not MISSING:
        text = _cut(inspect.formatannotation(target), max_chars)
        return Entry(name=name, line=f"{name}: type = {redaction.scrub_text(text)}", signature=None)
    if isinstance(value, types.ModuleType):
        return Entry(name=name, line=f"{name}: module", signature=None)
    if callable(value):
        # A signature is never a secret, so callables are shown even under a sensitive-looking name.
        signature = signature_text(value, max_chars)
        if signature is None:
            return Entry(name=name, line=f"{name}: <callable; signature-unavailable>", signature=None)
        signature = redaction.scrub_text(signature)  # defaults may hold credentials
        intent = intent_of(value)
        note = f"  # intent: {redaction.scrub_text(intent)}" if intent else ""
        return Entry(name=name, line=f"{name}: {signature}{note}", signature=signature)
    shown = redaction.mask_value(name, value)
    rendered = render_value(
        shown, max_tokens=limits.value_max_tokens, style=style, counter=counter, redaction=redaction
    )
    line = f"{name}: {type_name(value)} = {rendered}"
    if limits.object_max_methods and shown is value:
        line = "\n".join((line, *_method_lines(name, value, limits.object_max_methods, max_chars, redaction)))
    return Entry(name=name, line=line, signature=None)


def _method_lines(name: str, value: object, most: int, max_chars: int, redaction: ContextRedaction) -> list[str]:
    """`name.method: (params) -> ret` for up to `most` public methods of an instance of a user class (the
    model then knows what it may call), and a count of those left out."""
    kind = type(value)
    if kind.__module__ == "builtins" or isinstance(value, type):
        return []
    methods = [
        attribute
        for attribute in dir(kind)
        if not attribute.startswith("_") and inspect.isfunction(inspect.getattr_static(kind, attribute, None))
    ]
    lines = []
    for method in methods[:most]:
        signature = signature_text(getattr(value, method), max_chars)
        lines.append(f"{name}.{method}: {redaction.scrub_text(signature or '<signature-unavailable>')}")
    if len(methods) > most:
        lines.append(f"{name}: {len(methods) - most} more methods not listed")
    return lines


def render_entry(
    name: str,
    value: object,
    *,
    limits: StepContextLimits,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
) -> str:
    """Render one summary line for `name` bound to `value` (see the module notes for the forms).

    Args:
        name: The bound name.
        value: Its value; only a bounded part of it is read.
        limits: `value_max_tokens` bounds the value rendering and the signature text.
        style: Rendering style of values.
        counter: Token counter used to bound the value.
        redaction: Masking rules.

    Returns:
        The line, without a trailing newline and without a disambiguation note.
    """
    return build_entry(name, value, limits=limits, style=style, counter=counter, redaction=redaction).line


def _summarize(
    candidates: Iterator[tuple[str, object]],
    total: int,
    *,
    kind: str,
    max_tokens: int,
    max_items: int,
    limits: StepContextLimits,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
    placeholders: Mapping[str, str] = types.MappingProxyType({}),
    leading: Collection[str] = (),
) -> str:
    """Render `candidates` (in selection order) until a limit is hit; output is sorted by name, the `leading`
    names first."""
    if total == 0:
        return ""
    snipped_cost = counter.count(SNIPPED_MARKER) + 1
    chosen: list[Entry] = []
    used = 0
    for name, value in candidates:
        if len(chosen) >= max_items:
            break
        entry = build_entry(
            name, value, limits=limits, style=style, counter=counter, redaction=redaction, placeholder=placeholders.get(name)
        )
        cost = counter.count(entry.line) + 1  # +1 for the newline
        reserve = snipped_cost if len(chosen) + 1 < total else 0
        if used + cost + reserve > max_tokens:
            break
        chosen.append(entry)
        used += cost
    chosen, costs = disambiguate(chosen, counter)
    used = sum(costs)
    # Disambiguation notes cost tokens too; give back the last selected entries until the budget holds.
    while chosen and used + (snipped_cost if len(chosen) < total else 0) > max_tokens:
        chosen.pop()
        used -= costs.pop()
    lines = [entry.line for entry in sorted(chosen, key=lambda entry: (entry.name not in leading, entry.name))]
    if len(chosen) < total:
        lines.append(SNIPPED_MARKER)
        _logger.info(
            "%s summary snipped: %d of %d entries left out (limits: %d tokens, %d items)",
            kind,
            total - len(chosen),
            total,
            max_tokens,
            max_items,
        )
    return "\n".join(lines)


def disambiguate(entries: list[Entry], counter: TokenCounter) -> tuple[list[Entry], list[int]]:
    """The entries with a `# disambiguation` note on each callable whose signature another one shares, and
    the token cost of each line."""
    seen: dict[str, int] = {}
    for entry in entries:
        if entry.signature is not None:
            seen[entry.signature] = seen.get(entry.signature, 0) + 1
    result = [
        dataclasses.replace(entry, line=f"{entry.line}  # disambiguation: use {entry.name}")
        if entry.signature is not None and seen[entry.signature] > 1
        else entry
        for entry in entries
    ]
    return result, [counter.count(entry.line) + 1 for entry in result]


def render_locals_summary(
    step_locals: Mapping[str, object],
    *,
    limits: StepContextLimits,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
    priority: Sequence[str] = (),
    placeholders: Mapping[str, str] = types.MappingProxyType({}),
    shared: Collection[str] = (),
) -> str:
    """Render the locals summary of a step.

    Every name not starting with `__` is eligible and the output is sorted by name, the `shared` names (read
    bindings that hold a global, the same for every call) first: a provider's prompt cache then reuses them
    with the rest of the prompt's shared start. When the limits
    (`locals_max_tokens`, `locals_max_items`) cannot hold every entry, the names in `priority` (the block's
    own bindings) are kept first and the rest are taken in name order; the kept lines are still printed in
    name order, followed by `<snipped>`.

    Args:
        step_locals: The step's locals.
        limits: Context limits.
        style: Rendering style of values.
        counter: Token counter for the budgets.
        redaction: Masking rules.
        priority: Names to keep first when the summary has to be cut.
        placeholders: For the names whose values are sent as media, the text shown instead of the value.
        shared: Names listed before the others.

    Returns:
        The summary lines joined by newlines, or `""` when there is nothing to show.
    """
    names = sorted(name for name in step_locals if not name.startswith("__"))
    first = [name for name in dict.fromkeys(priority) if name in step_locals and not name.startswith("__")]
    kept = set(first)
    order = first + [name for name in names if name not in kept]
    return _summarize(
        ((name, step_locals[name]) for name in order),
        len(names),
        kind="locals",
        max_tokens=limits.locals_max_tokens,
        max_items=limits.locals_max_items,
        limits=limits,
        style=style,
        counter=counter,
        redaction=redaction,
        placeholders=placeholders,
        leading=shared,
    )


def _resolve_global(name: str, step_globals: Mapping[str, object]) -> object:
    if name in step_globals:
        return step_globals[name]
    namespace = step_globals.get("__builtins__", builtins)
    if isinstance(namespace, Mapping):  # outside `__main__`, `__builtins__` is the builtins dict
        return namespace.get(name, MISSING)
    return getattr(namespace, name, MISSING)


def render_globals_summary(
    references: Iterable[str],
    step_locals: Mapping[str, object],
    step_globals: Mapping[str, object],
    *,
    limits: StepContextLimits,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
) -> str:
    """Render the globals summary: referenced names that are not step locals, resolved from the globals.

    Names are looked up in `step_globals`, then in its `__builtins__`; a name found in neither is left out
    silently, as are names starting with `__`. Limits are `globals_max_tokens` and `globals_max_items`.

    Args:
        references: Top-level names the program text refers to (escaped references already removed).
        step_locals: The step's locals; names bound there are not repeated here.
        step_globals: The step's globals.
        limits: Context limits.
        style: Rendering style of values.
        counter: Token counter for the budgets.
        redaction: Masking rules.

    Returns:
        The summary lines joined by newlines, or `""` when there is nothing to show.
    """
    resolved: list[tuple[str, object]] = []
    for name in sorted(set(references)):
        if name.startswith("__") or name in step_locals:
            continue
        value = _resolve_global(name, step_globals)
        if value is not MISSING:
            resolved.append((name, value))
    return _summarize(
        iter(resolved),
        len(resolved),
        kind="globals",
        max_tokens=limits.globals_max_tokens,
        max_items=limits.globals_max_items,
        limits=limits,
        style=style,
        counter=counter,
        redaction=redaction,
    )
