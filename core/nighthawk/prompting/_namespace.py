"""The locals summary of a step whose locals are a module namespace (a notebook's, in a `%%natural` cell).

A function has a few locals, and the specification's summary lists them all in name order. A notebook holds
a hundred names: the few the cell is about, the scratch of earlier cells (`tmp`, `preds`, `i`), and what was
imported. The model needs the first in full and only needs to know the others exist, so the summary has two
tiers and the import lines:

1. the names the cell names (`_mentions.py`): its bindings and names written as code, and the plain words
   that name one of the user's own values. Each gets the rich preview of `_summaries.build_entry` with a
   larger value budget (`pinned_value_tokens`), and none is ever cut;
2. every other user name, one short line each (`_explorer.py`), most recently assigned first, within one
   budget for all of them (`_OTHERS_MAX_TOKENS`, and the locals limits); past it, a `<snipped>` line counts
   the names left out and says `nh_eval` can list them;
3. what was imported (`_imports.py`): a line per star-imported module, then one `imported:` line. Imported
   names are never listed as the user's, and a module keeps its place on the line even when the cell names it.
"""

from __future__ import annotations

import dataclasses
import logging
import types
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from ._explorer import recent_first, short_line
from ._imports import find_imports, import_lines
from ._summaries import SNIPPED_MARKER, build_entry, disambiguate

if TYPE_CHECKING:
    from ..secrets import ContextRedaction
    from ._limits import JsonRendererStyle, StepContextLimits
    from ._mentions import Mentions
    from ._tokens import TokenCounter

__all__ = ["pinned_value_tokens", "render_namespace_summary"]

_logger = logging.getLogger("nighthawk")
# What the second tier may cost in all: about forty short lines. The model asks `nh_eval` for the rest.
_OTHERS_MAX_TOKENS = 320


def pinned_value_tokens(limits: StepContextLimits, pinned: int) -> int:
    """The value budget of each name the cell names: twice `value_max_tokens` while `locals_max_tokens` holds
    them all, never less than `value_max_tokens`."""
    return max(limits.value_max_tokens, min(2 * limits.value_max_tokens, limits.locals_max_tokens // max(pinned, 1)))


def render_namespace_summary(
    step_locals: Mapping[str, object],
    step_globals: Mapping[str, object],
    *,
    mentioned: Mentions,
    shown_elsewhere: Collection[str] = (),
    limits: StepContextLimits,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
    placeholders: Mapping[str, str] = types.MappingProxyType({}),
) -> str:
    """Render the locals summary of a module namespace (see the module notes for the tiers).

    Args:
        step_locals: The step's locals (a notebook's user variables).
        step_globals: The module namespace itself: its modules are listed with the imports, and its input
            history (`_ih`) orders the second tier.
        mentioned: The names the program mentions (`program_mentions`).
        shown_elsewhere: Names the globals summary lists; not repeated here.
        limits: `value_max_tokens` sizes the first tier's previews; `locals_max_tokens` and
            `locals_max_items` bound the second.
        style: Rendering style of values.
        counter: Token counter for the budgets.
        redaction: Masking rules.
        placeholders: For the names whose values are sent as media, the text shown instead of the value.

    Returns:
        The summary lines joined by newlines, or `""` when there is nothing to show.
    """
    namespace = {name: value for name, value in step_locals.items() if not name.startswith("__")}
    for name, value in step_globals.items():
        if isinstance(value, types.ModuleType) and not name.startswith("_") and name not in namespace:
            namespace[name] = value
    for name in shown_elsewhere:
        namespace.pop(name, None)
    history = step_globals.get("_ih")
    imports = find_imports(namespace, step_globals.get("__name__", "__main__"), history)
    own = [name for name in namespace if name not in imports.sources]
    pinned = [name for name in mentioned.code if name in namespace and not isinstance(namespace[name], types.ModuleType)]
    pinned = list(dict.fromkeys((*pinned, *(word for word in mentioned.words if word in own))))
    rich = dataclasses.replace(limits, value_max_tokens=pinned_value_tokens(limits, len(pinned)))
    options = {"style": style, "counter": counter, "redaction": redaction}
    kept = [build_entry(name, namespace[name], limits=rich, placeholder=placeholders.get(name), **options) for name in pinned]
    entries, costs = disambiguate(kept, counter)
    imported = import_lines(imports, namespace, shown=pinned)
    others = recent_first([name for name in own if name not in pinned], history)
    budget = min(_OTHERS_MAX_TOKENS, limits.locals_max_tokens - sum(costs))
    room = limits.locals_max_items - len(entries) - len(imported) - 1  # the `<snipped>` line takes one
    lines, used = [], 0
    for name in others:
        if len(lines) >= room:
            break
        placeholder = placeholders.get(name)
        line = short_line(name, namespace[name], redaction) if placeholder is None else f"{name}: {placeholder}"
        cost = counter.count(line) + 1
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    left = len(others) - len(lines)
    summary = [entry.line for entry in entries] + lines
    if left:
        summary.append(f"{SNIPPED_MARKER} {left} more of your names not shown; nh_eval can list them")
        _logger.info(
            "locals summary snipped: %d of %d names left out (limits: %d tokens, %d items)",
            left,
            len(namespace),
            limits.locals_max_tokens,
            limits.locals_max_items,
        )
    return "\n".join(summary + imported)
