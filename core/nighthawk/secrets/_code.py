"""Secrets in code shown to a person: masked only inside the code's string literals.

Scrubbing code as plain text lets a mask swallow code: the shape of a connection string's password or of a
PEM block runs on past the closing quote, so `dict(Password=os.remove(p))` read as `dict(Password=<masked>`.
Here the code is split by Python's own tokenizer, and only the contents of its string literals are scrubbed;
names, calls, operators and brackets are always shown as written. What counts as a literal is checked
against Python's parser where the code parses: a literal the parser does not see exactly there (the two
disagree on some broken code) is shown unmasked.

* An f-string is scrubbed in its text between the fields; each field's expression is code again.
* Implicitly joined literals (`'sk-' 'proj-...'`) and literals with escapes (`'\\x73k-...'`) are judged by
  the value Python builds from them: a secret that only shows in that value masks the whole of each piece.
* A string whose text is itself Python code that calls something (`exec('os.remove(p)')`) is treated as
  code: only the literals inside it are scrubbed.
* Code the tokenizer cannot read to its end is shown as written from the first place it fails.

Loaded only when code is shown for approval (confirm mode).
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["mask_code_strings"]

# Tokens that may stand between two literals Python joins into one (`'a'\n  'b'` inside brackets).
_BETWEEN_JOINED = frozenset({tokenize.NL, tokenize.COMMENT})
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+: f-strings come in pieces
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)
_TSTRING_START = getattr(tokenize, "TSTRING_START", None)  # Python 3.14+
_TSTRING_END = getattr(tokenize, "TSTRING_END", None)
_PIECE_STARTS = frozenset(filter(None, (_FSTRING_START, _TSTRING_START)))
_PIECE_ENDS = frozenset(filter(None, (_FSTRING_END, _TSTRING_END)))
# Nodes that run something: a string of code holding one is code, not data (`exec('os.remove(p)')`). An
# assignment alone is not among them: `password=hunter2` parses as one, and is a credential to mask.
_RUNS = (ast.Call, ast.Import, ast.ImportFrom, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.Raise)


@dataclass(frozen=True)
class _Piece:
    """The text between a literal's quotes, or a stretch of an f-string's text between its fields."""

    start: int
    end: int
    value: str | None
    """What Python builds from this piece (bytes as Latin-1), or None when it could not be worked out."""


@dataclass(frozen=True)
class _Literal:
    """One string token (or a whole f-string): where it is, and its pieces of text; the rest is code."""

    start: int
    end: int
    pieces: tuple[_Piece, ...]
    code: tuple[tuple[int, int], ...]
    """The spans of the fields' expressions (an f-string), each code of its own."""


def mask_code_strings(code: str, scrub: Callable[[str], str], placeholder: str) -> str:
    """`code` with secrets masked inside its string literals only (`scrub` masks a text; `placeholder` is
    what a whole piece is replaced by). Line breaks are shown as Python reads them (`\\r` ends a line)."""
    text = code.replace("\r\n", "\n").replace("\r", "\n")
    return _mask(text, scrub, placeholder, depth=0)


def _mask(text: str, scrub: Callable[[str], str], placeholder: str, *, depth: int) -> str:
    if depth > 8 or not any(quote in text for quote in "'\""):
        return text
    literals = list(_literals(text))
    parsed = _parsed_strings(text)
    replacements: list[tuple[int, int, str]] = []
    for group in _joined(text, literals):
        if parsed is not None and parsed.get((group[0].start, group[-1].end), _UNSEEN) != _group_value(group):
            continue  # the parser does not see this literal here: shown as written
        replacements += _mask_group(text, group, scrub, placeholder, depth)
    for literal in literals:
        for start, end in literal.code:
            replacements.append((start, end, _mask(text[start:end], scrub, placeholder, depth=depth + 1)))
    out, at = [], 0
    for start, end, new in sorted(replacements):
        out += [text[at:start], new]
        at = end
    return "".join(out) + text[at:]


_UNSEEN = object()


def _mask_group(
    text: str, group: list[_Literal], scrub: Callable[[str], str], placeholder: str, depth: int
) -> list[tuple[int, int, str]]:
    """The replacements that mask the secrets in one run of joined literals."""
    pieces = [piece for literal in group for piece in literal.pieces]
    raw = [text[piece.start : piece.end] for piece in pieces]
    values = [raw_text if piece.value is None else piece.value for piece, raw_text in zip(pieces, raw)]
    whole = "".join(values)
    if _is_code(whole):
        # A string of code (for `exec`, `eval`, `compile`): its own literals are masked, its code is shown.
        if len(pieces) == 1 and values[0] == raw[0]:
            return [(pieces[0].start, pieces[0].end, _mask(raw[0], scrub, placeholder, depth=depth + 1))]
        return []
    masked = [scrub(piece) for piece in raw]
    if masked == raw and scrub(whole) == whole:
        return []
    # What Python builds from the masked pieces must hold no secret either: an escape or a join can hide
    # one from the scrubbing of each piece's text. A masked span is read as a space (a join stays apart).
    after = "".join(value if new == old else new.replace(placeholder, " ") for value, new, old in zip(values, masked, raw))
    if scrub(after) != after:
        masked = [placeholder if piece else piece for piece in raw]
    return [(piece.start, piece.end, new) for piece, new, old in zip(pieces, masked, raw) if new != old]


def _is_code(value: str) -> bool:
    """Whether `value` is Python code that runs something (a call, an import, a loop), or a name or dotted
    name (`'os.remove'`, `'__import__'` for `getattr` or `importlib`): what code does with it is part of
    what runs. A real secret never has to be shown as one: the model only ever reads secrets masked, so a
    name-like "secret" in its code is one it planted to hide a name."""
    stripped = value.strip()
    if stripped and all(part.isidentifier() for part in stripped.split(".")):
        return True
    if "(" not in value and "import" not in value and ":" not in value:
        return False
    try:
        tree = ast.parse(stripped)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(isinstance(node, _RUNS) for node in ast.walk(tree))


# --- finding the literals -----------------------------------------------------------------------------------


def _offsets(text: str) -> list[int]:
    """Where each line of `text` starts (line 1 at index 0)."""
    starts = [0, 0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of `text`, up to the first place the tokenizer cannot read (the rest is shown as written)."""
    try:
        yield from tokenize.generate_tokens(io.StringIO(text).readline)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return


def _literals(text: str) -> Iterator[_Literal]:
    lines = _offsets(text)

    def at(point: tuple[int, int]) -> int:
        return lines[point[0]] + point[1]

    opened = nested = 0  # where the outermost f-string in pieces started (3.12+), and how deep we are in it
    for token in _tokens(text):
        span: tuple[int, int] | None = None
        if token.type in _PIECE_STARTS:
            opened = at(token.start) if nested == 0 else opened
            nested += 1
        elif token.type in _PIECE_ENDS and nested:
            nested -= 1
            span = (opened, at(token.end)) if nested == 0 else None
        elif token.type == tokenize.STRING and nested == 0:
            span = (at(token.start), at(token.end))
        if span is not None and (literal := _literal(text, *span)) is not None:
            yield literal


def _joined(text: str, literals: list[_Literal]) -> Iterator[list[_Literal]]:
    """The literals in runs that Python joins into one value (only spaces, line breaks and comments apart)."""
    group: list[_Literal] = []
    for literal in literals:
        if group and not _only_space_between(text, group[-1].end, literal.start):
            yield group
            group = []
        group.append(literal)
    if group:
        yield group


def _only_space_between(text: str, start: int, end: int) -> bool:
    between = text[start:end]
    if not between.strip():
        return True
    tokens = [token for token in _tokens(between) if token.type not in (tokenize.NEWLINE, tokenize.ENDMARKER)]
    return all(token.type in _BETWEEN_JOINED for token in tokens) and "\\" not in between.replace("\\\n", "")


def _literal(text: str, start: int, end: int) -> _Literal | None:
    token = text[start:end]
    prefix_size = next((index for index, char in enumerate(token) if char in "'\""), None)
    if prefix_size is None:
        return None
    prefix = token[:prefix_size].lower()
    quote = token[prefix_size : prefix_size + 3] if token[prefix_size : prefix_size + 3] in ("'''", '"""') else token[prefix_size]
    if len(token) < prefix_size + 2 * len(quote) or not token.endswith(quote):
        return None
    inner_start, inner_end = start + prefix_size + len(quote), end - len(quote)
    if "f" not in prefix and "t" not in prefix:
        return _Literal(start, end, (_Piece(inner_start, inner_end, _value(token)),), ())
    parts = _template_parts(text, inner_start, inner_end, raw="r" in prefix)
    if parts is None:
        return None  # an f-string this reading cannot follow: shown as written
    plain = prefix.replace("f", "").replace("t", "")
    pieces = tuple(
        _Piece(a, b, _value(plain + quote + text[a:b].replace("{{", "{").replace("}}", "}") + quote))
        for literal_part, a, b in parts
        if literal_part and b > a
    )
    return _Literal(start, end, pieces, tuple((a, b) for literal_part, a, b in parts if not literal_part))


def _value(source: str) -> str | None:
    try:
        with warnings.catch_warnings():  # an invalid escape warns when the model's code runs, not here
            warnings.simplefilter("ignore")
            value = ast.literal_eval(source)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value.decode("latin-1") if isinstance(value, bytes) else value if isinstance(value, str) else None


def _template_parts(text: str, start: int, end: int, *, raw: bool) -> list[tuple[bool, int, int]] | None:
    """The parts of an f-string's text between `start` and `end`: (is its own text, start, end). A field's
    expression is a part of its own (code); its conversion and format spec are left out of every part, so
    they are shown as written. None when the text cannot be followed."""
    parts: list[tuple[bool, int, int]] = []
    at = piece = start
    while at < end:
        char = text[at]
        if char == "\\" and not raw:
            if text.startswith("\\\\", at):
                at += 2
            elif text.startswith("\\N{", at):
                close = text.find("}", at, end)
                if close < 0:
                    return None
                at = close + 1
            else:
                at += 1  # the next character is read on its own: `\{` still opens a field
        elif text.startswith("{{", at) or text.startswith("}}", at):
            at += 2
        elif char == "{":
            parts.append((True, piece, at))
            field = _field(text, at + 1, end)
            if field is None:
                return None
            expression_end, close = field
            parts.append((False, at + 1, expression_end))
            at = piece = close + 1
        elif char == "}":
            return None
        else:
            at += 1
    parts.append((True, piece, end))
    return parts


def _field(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Where the expression of the field opened just before `start` ends, and where its `}` is."""
    depth = 0
    expression_end: int | None = None
    at = start
    while at < end:
        char = text[at]
        if char in "'\"":
            at = _string_end(text, at, end)
            if at < 0:
                return None
            continue
        if char == "#":
            line_end = text.find("\n", at, end)
            at = end if line_end < 0 else line_end
            continue
        if char in "([{":
            depth += 1
        elif char in ")]" or (char == "}" and depth):
            depth -= 1
        elif char == "}":
            return (expression_end if expression_end is not None else at), at
        elif depth == 0 and expression_end is None and (
            (char == "!" and not text.startswith("!=", at)) or (char == ":" and not text.startswith(":=", at))
        ):
            expression_end = at
            if char == ":":  # the format spec: shown as written, up to its own closing brace
                close = _spec_end(text, at + 1, end)
                return None if close is None else (expression_end, close)
        at += 1
    return None


def _spec_end(text: str, start: int, end: int) -> int | None:
    """Where a format spec starting at `start` ends (its closing `}`), past the fields nested in it."""
    at = start
    while at < end:
        if text[at] == "{":
            field = _field(text, at + 1, end)
            if field is None:
                return None
            at = field[1] + 1
            continue
        if text[at] == "}":
            return at
        at += 1
    return None


def _string_end(text: str, start: int, end: int) -> int:
    """The end of the string literal whose quote is at `start` (inside an f-string's field), or -1."""
    prefix_start = start
    while prefix_start > 0 and text[prefix_start - 1].isalpha():
        prefix_start -= 1
    prefix = text[prefix_start:start].lower()
    quote = text[start : start + 3] if text[start : start + 3] in ("'''", '"""') else text[start]
    at = start + len(quote)
    while at < end:
        if text[at] == "\\" and "r" not in prefix:
            at += 2
            continue
        if text.startswith(quote, at):
            return at + len(quote)
        if text[at] == "{" and ("f" in prefix or "t" in prefix) and not text.startswith("{{", at):
            field = _field(text, at + 1, end)
            if field is None:
                return -1
            at = field[1] + 1
            continue
        at += 1
    return -1


# --- what the parser sees ------------------------------------------------------------------------------


def _parsed_strings(text: str) -> dict[tuple[int, int], str] | None:
    """The string literals Python's parser sees in `text`, by span: the value each builds (an f-string's
    own text only). None when `text` is no expression or statement Python reads."""
    lead = len(text) - len(text.lstrip())
    source = text[lead:].rstrip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source, mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                return None
    lines = source.split("\n")
    starts = _offsets(source)

    def offset(line: int, column: int) -> int:
        return lead + starts[line] + len(lines[line - 1].encode("utf-8")[:column].decode("utf-8", "ignore"))

    found: dict[tuple[int, int], str] = {}
    for node in ast.walk(tree):
        value: str | None = None
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            value = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
        elif isinstance(node, ast.JoinedStr) or type(node).__name__ == "TemplateStr":
            value = "".join(
                part.value for part in getattr(node, "values", ()) if isinstance(part, ast.Constant) and isinstance(part.value, str)
            )
        if value is not None and node.end_lineno is not None and node.end_col_offset is not None:
            span = (offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset))
            found.setdefault(span, value)
    return found


def _group_value(group: list[_Literal]) -> str | None:
    values = [piece.value for literal in group for piece in literal.pieces]
    return None if any(value is None for value in values) else "".join(values)  # type: ignore[arg-type]
