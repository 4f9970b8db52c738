"""Whether a message quoted in the docs is one the code can still produce.

The code's messages are its string literals and f-strings, an f-string's replacement fields standing for
the values a message fills in. A quote may be part of a message; `…` in it stands for any text; a leading
exception type (`TypeError: `) is allowed. A quote matches when some message of one template contains it,
with the values the quote shows being short (a name, a number, a path, a short phrase) and most of the
quote being the template's own text: a value cannot stand in for words the code no longer writes.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

__all__ = ["produced_by_the_code"]

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "core" / "nighthawk", ROOT / "nighthawk_ipython"]

_EXCEPTION_PREFIX = re.compile(r"^[A-Z]\w*(?:Error|Exception|Warning): ")

_ANY = object()
"""In a quote: `…`, any text."""
_SLOT = object()
"""In a message template: a replacement field of an f-string."""
_SLOT_SPACES = 8
"""A replacement field stands for a value: a name, a number, a path, a short phrase at most."""
_LITERAL_SHARE = 0.6
"""Share of a quote's characters (`…` aside) that must be the code's own text rather than values."""

Pattern = tuple[object, ...]


@cache
def _templates() -> tuple[Pattern, ...]:
    """Every string literal and f-string of the product's code (docstrings aside), fields as slots."""
    templates: list[Pattern] = []
    for folder in SOURCES:
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text())
            docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
            for node in ast.walk(tree):
                if id(node) in docstrings:
                    continue
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    templates.append(tuple(node.value))
                elif isinstance(node, ast.JoinedStr):
                    pattern: list[object] = []
                    for part in node.values:
                        if isinstance(part, ast.Constant):
                            pattern.extend(part.value)
                        else:
                            pattern.append(_SLOT)
                    templates.append(tuple(pattern))
    return tuple(templates)


def _quote_pattern(quote: str) -> Pattern:
    quote = _EXCEPTION_PREFIX.sub("", quote)
    pattern: list[object] = [_ANY]
    for char in quote:
        pattern.append(_ANY if char == "…" else char)
    pattern.append(_ANY)
    return tuple(pattern)


def _shown_literally(quote: Pattern, template: Pattern) -> int:
    """How many characters of the quote a message of `template` can show as the template's own text, when
    the message contains the quote (its `…` filled in); -1 if no message of `template` contains it."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * (len(quote) + len(template))))
    # A field's value never runs into the first word of the text that follows the field in the template:
    # otherwise a value could swallow a quote's words the code no longer writes.
    following: dict[int, tuple[object, ...]] = {}
    for index, part in enumerate(template):
        if part is _SLOT:
            rest = []
            for after in template[index + 1 :]:
                if after is _SLOT:
                    break
                rest.append(after)
            word = re.search(r"[A-Za-z]{3,}", "".join(rest))  # type: ignore[arg-type]
            following[index] = tuple(word.group()) if word else ()

    def runs_into(i: int, j: int) -> bool:
        word = following[j]
        return bool(word) and quote[i : i + len(word)] == word

    # `filled`: whether the quote has shown a character of the current field. A field shows a value of at
    # least one character, or stands inside a `…` of the quote.
    @cache
    def best(i: int, j: int, spaces: int, filled: bool) -> int:
        if i == len(quote) and j == len(template):
            return 0
        q = quote[i] if i < len(quote) else None
        t = template[j] if j < len(template) else None
        found = -1
        if q is _ANY:
            found = max(found, best(i + 1, j, spaces, filled))  # `…` ends here
            if t is not None:
                found = max(found, best(i, j + 1, 0, False))  # `…` stands for the template's text
        if t is _SLOT:
            if filled:
                found = max(found, best(i, j + 1, 0, False))  # the field ends here
            if isinstance(q, str) and (q != " " or spaces < _SLOT_SPACES) and not runs_into(i, j):
                found = max(found, best(i + 1, j, spaces + (q == " "), True))  # the quote shows its value
        if isinstance(q, str) and isinstance(t, str) and q == t:
            rest = best(i + 1, j + 1, 0, False)
            if rest >= 0:
                found = max(found, rest + 1)
        return found

    return best(0, 0, 0, False)


def produced_by_the_code(quote: str) -> bool:
    """Whether a message the code can produce contains `quote` (see the module docstring)."""
    pattern = _quote_pattern(quote)
    # Most of the quote must be the code's own text: values filled into the message are the rest.
    needed = _LITERAL_SHARE * sum(1 for part in pattern if part is not _ANY)
    words = {word for word in re.findall(r"[A-Za-z]{6,}", quote)}
    for template in _templates():
        literal = "".join(part for part in template if isinstance(part, str))
        if words and not any(word in literal for word in words):
            continue
        if _shown_literally(pattern, template) >= needed:
            return True
    return False
