"""Names in code that read as other names: written in letters Python folds (NFKC) or in mixed scripts.

Python reads a name in its NFKC form, so `ｏｓ.ｒｅｍｏｖｅ(p)` (full-width letters) or `𝐨𝐬.𝐫𝐞𝐦𝐨𝐯𝐞(p)`
(mathematical bold) runs `os.remove(p)`, while a reader scanning for `remove` does not see it. The other
way round, `rеmove` with a Cyrillic `е` looks like `remove` and is another name altogether (one the
model's code bound earlier). Code shown to a person for approval names each as Python reads it: a folded
name in its folded spelling, a name that mixes scripts with the letters outside its main script written as
`<U+XXXX>`; and a note lists what was changed. Names are found with Python's tokenizer, so string literals
are left as written (but an f-string's words, before Python 3.12 one token with its fields); from where
the tokenizer fails, every word is read as a name.

Loaded only when code is shown for approval (confirm mode).
"""

from __future__ import annotations

import io
import re
import tokenize
import unicodedata
from collections import Counter

__all__ = ["names_as_read"]

_WORD = re.compile(r"[^\W\d]\w*")
_SAME_SCRIPT = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HALFWIDTH": "CJK"}
"""Scripts written together in one word (Japanese mixes kanji, hiragana and katakana)."""


def names_as_read(code: str) -> tuple[str, tuple[str, ...]]:
    """`code` with each name that reads as another written as Python reads it (see above), and one note per
    such name (`ｏｓ is read as os`)."""
    notes: dict[str, str] = {}
    pieces: list[str] = []
    done = 0
    for start, end in _name_spans(code):
        name = code[start:end]
        shown = _as_read(name, notes)
        pieces += [code[done:start], shown]
        done = end
    return "".join(pieces) + code[done:], tuple(notes.values())


def _name_spans(code: str) -> list[tuple[int, int]]:
    """Where the names are: the tokenizer's NAME tokens, then every word past the place it fails."""
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def at(point: tuple[int, int]) -> int:
        return min(starts[min(point[0] - 1, len(starts) - 1)] + point[1], len(code))

    spans: list[tuple[int, int]] = []
    readable = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME:
                spans.append((at(token.start), at(token.end)))
            elif token.type == tokenize.STRING and "f" in token.string.partition(token.string[-1])[0].lower():
                # An f-string in one token (before Python 3.12): its fields are code; its words are all read.
                spans += [match.span() for match in _WORD.finditer(code, at(token.start), at(token.end))]
            readable = at(token.end)
    except (tokenize.TokenError, SyntaxError):
        spans += [match.span() for match in _WORD.finditer(code, readable)]
    return spans


def _as_read(name: str, notes: dict[str, str]) -> str:
    if name.isascii():
        return name
    folded = unicodedata.normalize("NFKC", name)
    if folded != name:
        notes.setdefault(name, f"{name} is read as {folded}")
        name = folded
    scripts = [_script(char) for char in name]
    counted = Counter(script for script in scripts if script)
    if len(counted) < 2:
        return name
    main = counted.most_common(1)[0][0]
    shown = "".join(char if script in ("", main) else f"<U+{ord(char):04X}>" for char, script in zip(name, scripts))
    notes.setdefault(shown, f"{shown} mixes scripts ({', '.join(sorted(counted))}): another name than it looks")
    return shown


def _script(char: str) -> str:
    """The script a letter belongs to, by the first word of its Unicode name (`LATIN`, `CYRILLIC`); empty
    for what is written in any script (digits, `_`, combining marks)."""
    if not char.isalpha():
        return ""
    word = unicodedata.name(char, "").partition(" ")[0]
    if word in ("", "COMBINING", "MODIFIER"):
        return ""
    return _SAME_SCRIPT.get(word, word)
