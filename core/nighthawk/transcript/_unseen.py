"""Characters a reader does not see as they are, and text with each of them written out as `<U+XXXX>`.

One rule for every place that shows a person text that came from a model or from values (step displays,
the confirm view, the "As Python" code): a model that writes `\\u202e` or `\\x1b[2K` into an argument, a
result or an error message must not be able to reverse, hide or erase what the reader sees next to it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["unseen", "visible_controls"]

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
"""Unicode categories of characters a reader does not see as they are: controls (a carriage return or a
terminal escape redraws the line), bidi overrides and zero-width marks (they reorder or hide what follows,
as in "Trojan Source"), line and paragraph separators, unassigned code points, and spaces other than the
ordinary one (a no-break or em space reads as a plain space)."""

_BLANK = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\u2800") | frozenset(
    chr(code) for start, end in ((0x180B, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF)) for code in range(start, end + 1)
)
"""Characters of other categories that show as nothing, yet Python takes in a name: `\\u3164 = 1` binds a
name that looks like a space, and `a\\ufe00` (a variation selector) is another name than `a` that looks the same."""


def unseen(character: str) -> bool:
    """Whether one character shows as something else than itself (line breaks, tabs and spaces do not)."""
    return character not in "\n\t " and (character in _BLANK or unicodedata.category(character) in _HIDDEN)


def visible_controls(text: str) -> str:
    """`text` with every character that moves the cursor, erases, reorders or hides text when printed
    (carriage returns, escapes, backspaces, bidirectional and zero-width marks, invisible fillers) shown as
    `<U+XXXX>`; line breaks and tabs stay."""
    return "".join(f"<U+{ord(char):04X}>" if unseen(char) else char for char in text)
