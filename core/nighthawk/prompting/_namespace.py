"""The locals summary of a step whose locals are a module namespace (a notebook's, in a `%%natural` cell).

A function has a few locals, and the specification's summary lists them all in name order. A notebook holds
a hundred names, most of them imported, and a model that knows what `Counter` is still has to be told what
`sales` holds. So this summary ranks the names, prints them in rank order and cuts from the bottom:

1. every name the program mentions, as a binding (`<sales>`, `<:total>`, `<sales.amount>`) or as a plain
   word or dotted name in its text (`sum the amount in zsales`): never cut by a limit (a large value is
   shown by its bounded preview, like any other);
2. the user's data values;
3. functions and classes of the notebook (or any callable that is not a library's), with their signatures;
4. what was imported from libraries (modules, and functions, classes and typing forms a library module
   defines), one line, grouped by source module, names only:
   `imported: pandas as pd, collections (Counter, deque), math (sqrt)`: the sources imported as modules
   first, then the others, each in name order.

Within a rank, names are in name order: a star import binds names in its module's `__all__` order, which
some libraries (numpy) build from a set, so any other order would change the prompt from one kernel to the
next. When the item or token limit leaves names out, a last line starting
with `<snipped>` names them (up to `_MAX_LISTED`) and says `nh_eval` can inspect them.
"""

from __future__ import annotations

import itertools
import logging
import sys
import types
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from ._summaries import (
    MISSING,
    SNIPPED_MARKER,
    Entry,
    alias_target,
    build_entry,
    disambiguate,
)

if TYPE_CHECKING:
    from ..block import Program
    from ..configuration import JsonRendererStyle, StepContextLimits
    from ..secrets import ContextRedaction
    from ._tokens import TokenCounter

__all__ = ["mentioned_names", "render_namespace_summary"]

_logger = logging.getLogger("nighthawk")
_MAX_LISTED = 20
# Names listed per source module on the `imported:` line; the model asks `nh_eval` (`dir()`) for the rest.
_NAMES_PER_MODULE = 3


def mentioned_names(program: Program) -> tuple[str, ...]:
    """Every name the program mentions: its bindings, then each word of its text, in order of appearance."""
    return tuple(dict.fromkeys((*program.reads, *program.writes, *program.references, *program.words)))


def _public_paths(module: str) -> list[str]:
    """Where a library may export a name from `module`, shortest first (`pandas` before `pandas.core.frame`);
    an underscore module is tried after its public twin (`functools` before `_functools`)."""
    parts = module.split(".")
    paths: list[str] = []
    for end in range(1, len(parts) + 1):
        path = ".".join(parts[:end])
        if parts[end - 1].startswith("_"):
            paths.append(".".join((*parts[: end - 1], parts[end - 1].lstrip("_"))))
        paths.append(path)
    return paths


def _library_module(name: str, value: object, home: str) -> str | None:
    """The library module `value` (bound to `name`) was imported from, or `None` when it is the notebook's own.

    A module is its own source. A function, class or typing form counts as imported when a module other than
    `home` (the notebook's `__name__`) holds it under its own name; data, instances and aliases the notebook
    wrote (`Rows = list[dict]`) are the notebook's.
    """
    if isinstance(value, types.ModuleType):
        return value.__name__
    if not callable(value) and alias_target(value) is MISSING:
        return None
    try:
        module = getattr(value, "__module__", None)
        if module is None and hasattr(value, "__self__"):  # `random.random`: a method of the module's instance
            module = type(value.__self__).__module__
        own = getattr(value, "__name__", name)
    except Exception:  # a custom __getattr__
        return None
    if not isinstance(module, str) or module in (home, "__main__"):
        return None
    for path in _public_paths(module):
        source = sys.modules.get(path)
        # The module's own dict, not getattr: a lazy module `__getattr__` would import or warn.
        if source is not None and any(vars(source).get(key) is value for key in {own, name} if isinstance(key, str)):
            return path
    return None


def _imported_line(imports: Iterable[tuple[str, object, str]]) -> list[str]:
    """The parts of the `imported:` line: the modules, then one part per source module of the other names."""
    modules: dict[str, list[str]] = {}
    names: dict[str, list[str]] = {}
    for name, value, source in imports:
        if isinstance(value, types.ModuleType):
            modules.setdefault(source, []).append(source if name == source else f"{source} as {name}")
        else:
            own = getattr(value, "__name__", name)
            names.setdefault(source, []).append(name if own == name else f"{own} as {name}")
    parts: list[str] = []
    for source in dict.fromkeys((*modules, *names)):
        parts.extend(modules.get(source, ()))
        if source in names:
            listed = names[source][:_NAMES_PER_MODULE] + (["…"] if len(names[source]) > _NAMES_PER_MODULE else [])
            parts.append(f"{source} ({', '.join(listed)})")
    return parts


def render_namespace_summary(
    step_locals: Mapping[str, object],
    step_globals: Mapping[str, object],
    *,
    mentioned: Collection[str],
    shown_elsewhere: Collection[str] = (),
    limits: StepContextLimits,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
    placeholders: Mapping[str, str] = types.MappingProxyType({}),
) -> str:
    """Render the locals summary of a module namespace (see the module notes for the ranks).

    Args:
        step_locals: The step's locals (a notebook's user variables).
        step_globals: The module namespace itself: its modules are listed with the imports.
        mentioned: Names the program mentions (`mentioned_names`).
        shown_elsewhere: Names the globals summary lists; not repeated here.
        limits: `locals_max_tokens` and `locals_max_items` bound ranks 2 to 4.
        style: Rendering style of values.
        counter: Token counter for the budgets.
        redaction: Masking rules.
        placeholders: For the names whose values are sent as media, the text shown instead of the value.

    Returns:
        The summary lines joined by newlines, or `""` when there is nothing to show.
    """
    home = step_globals.get("__name__", "__main__")
    namespace = {name: value for name, value in step_locals.items() if not name.startswith("__")}
    for name, value in step_globals.items():
        if isinstance(value, types.ModuleType) and not name.startswith("_") and name not in namespace:
            namespace[name] = value
    for name in shown_elsewhere:
        namespace.pop(name, None)
    options = {"limits": limits, "style": style, "counter": counter, "redaction": redaction}
    sources = {name: _library_module(name, value, home) if isinstance(home, str) else None for name, value in namespace.items()}
    # A constant imported with functions (`from math import pi, sqrt`) is the library's too: found by identity
    # in a module something else was imported from.
    modules = [sys.modules[source] for source in dict.fromkeys(sources.values()) if source in sys.modules]
    for name, value in namespace.items():
        if sources[name] is None and not callable(value):
            sources[name] = next((module.__name__ for module in modules if vars(module).get(name, MISSING) is value), None)
    kept: list[Entry] = []
    ranked: list[tuple[str, object]] = []
    data: list[tuple[str, object]] = []
    imports: list[tuple[str, object, str]] = []
    for name, value in namespace.items():
        source = sources[name]
        if name in mentioned:
            kept.append(build_entry(name, value, placeholder=placeholders.get(name), **options))
        elif source is not None:
            imports.append((name, value, source))
        elif callable(value) or alias_target(value) is not MISSING:
            ranked.append((name, value))
        else:
            data.append((name, value))
    kept.sort(key=lambda entry: entry.name)
    imports.sort(key=lambda item: (item[2], item[0]))
    order = [*sorted(data, key=lambda pair: pair[0]), *sorted(ranked, key=lambda pair: pair[0])]
    # Only what the item limit can hold is rendered: a notebook of a thousand names costs what 80 cost.
    room = min(len(order), max(limits.locals_max_items - len(kept), 0))
    candidates = [build_entry(name, value, placeholder=placeholders.get(name), **options) for name, value in order[:room]]
    rest = [name for name, _ in order[room:]]
    return _fit(kept, candidates, rest, imports, limits=limits, counter=counter, total=len(namespace))


def _fit(
    kept: list[Entry],
    candidates: list[Entry],
    rest: list[str],
    imports: list[tuple[str, object, str]],
    *,
    limits: StepContextLimits,
    counter: TokenCounter,
    total: int,
) -> str:
    """The lines: `kept` whole, then as many candidates and imports as the limits hold, then what was left
    out (the candidates cut, the `rest` never rendered, the imports cut).

    `imports` is sorted by source module; they are cut a source module at a time, since a module shows at
    most `_NAMES_PER_MODULE` names and cutting one it does not show would save nothing.
    """
    groups = [len(list(group)) for _, group in itertools.groupby(imports, key=lambda item: item[2])]
    # Cut number `cut` leaves this many candidates and imported names: the imports go first, the last first.
    def shape(cut: int) -> tuple[int, int]:
        return len(candidates) - max(cut - len(groups), 0), sum(groups[: max(len(groups) - cut, 0)])

    def lines_for(cut: int) -> tuple[list[str], int]:
        chosen, imported = shape(cut)
        entries, _ = disambiguate([*kept, *candidates[:chosen]], counter)
        lines = [entry.line for entry in entries]
        parts = _imported_line(imports[:imported])
        if parts:
            lines.append("imported: " + ", ".join(parts))
        left = [entry.name for entry in candidates[chosen:]] + rest + [name for name, _, _ in imports[imported:]]
        if left:
            listed = ", ".join(left[:_MAX_LISTED]) + (f" and {len(left) - _MAX_LISTED} more" if len(left) > _MAX_LISTED else "")
            lines.append(f"{SNIPPED_MARKER} {len(left)} names not shown ({listed}); nh_eval can inspect them")
        return lines, len(left)

    def fits(cut: int) -> bool:
        lines, _ = lines_for(cut)
        chosen, imported = shape(cut)
        items = len(kept) + chosen + (1 if imported else 0)
        return items <= limits.locals_max_items and sum(counter.count(line) + 1 for line in lines) <= limits.locals_max_tokens

    # The fewest cuts that fit, found by bisection: each try renders every line, so trying one cut after
    # another would cost a thousand-name notebook a million counts. More cuts never cost more tokens, but for
    # the few names the `<snipped>` line lists; the last cut (only `kept`) is taken even when it does not fit.
    low, high = 0, len(groups) + len(candidates)
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    lines, left = lines_for(low)
    if left:
        _logger.info(
            "locals summary snipped: %d of %d entries left out (limits: %d tokens, %d items)",
            left,
            total,
            limits.locals_max_tokens,
            limits.locals_max_items,
        )
    return "\n".join(lines)
