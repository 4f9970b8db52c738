"""Which names a `%%natural` cell's program mentions, and how: as code, or as a plain word.

A name written as code is meant as one: a binding (`<sales>`, `<:total>`, `<sales.amount>`), a call
(`where(`), a dotted root (`sales.amount`), anything in backticks (`` `take` ``). A plain English word may
only happen to be a name: "take the max of all speeds" is about `speeds`, not numpy's `take`, `max` and
`all`. So the caller pins a word only when it names one of the user's own values. Contractions and
abbreviations ("the manager's", "i.e.", "e.g.") hold no word at all: their letters are not names.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..program.block import Program

__all__ = ["Mentions", "program_mentions"]

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# "i.e.", "e.g.", "a.k.a." and the rest of a contraction ("'s", "n't", "’ll"): no names in them. Only an
# apostrophe after a letter starts a contraction: the quote that opens 'sales' leaves the name a word.
_NOT_WORDS = re.compile(rf"(?<![\w.])(?:[A-Za-z]\.){{2,}}|(?<=[A-Za-z])['’][A-Za-z]+")
_BACKTICKS = re.compile(r"`([^`\n]+)`")
_CALL_OR_ROOT = re.compile(rf"(?<![\w.])({_IDENT})(?=\(|\.[A-Za-z_])")
_WORD = re.compile(rf"(?<![\w.]){_IDENT}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Mentions:
    """The names a program mentions, in order of first appearance."""

    code: tuple[str, ...]
    """Names written as code: bindings, calls, dotted roots and names in backticks."""

    words: tuple[str, ...]
    """The other words of the text that could name a variable."""

    @property
    def all(self) -> tuple[str, ...]:
        """Every mentioned name, the code ones first."""
        return tuple(dict.fromkeys((*self.code, *self.words)))


def program_mentions(program: Program) -> Mentions:
    """The names `program` mentions as code and as plain words (see the module notes)."""
    text = _NOT_WORDS.sub(" ", program.prompt_text)
    quoted = [word for span in _BACKTICKS.findall(text) for word in _WORD.findall(span)]
    code = dict.fromkeys((*program.reads, *program.writes, *program.references, *_CALL_OR_ROOT.findall(text), *quoted))
    words = [word for word in dict.fromkeys(_WORD.findall(_BACKTICKS.sub(" ", text))) if word not in code]
    return Mentions(code=tuple(code), words=tuple(words))
