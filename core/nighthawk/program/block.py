"""Stage 1, the block: recognise a Natural block and parse its program once.

A Natural block is a string literal whose text starts with the exact line `natural`. Its program is the
rest of the literal, dedented. The program may open with YAML frontmatter (`deny: [...]`), and names
Python variables with `<name>` (read), `<:name>` (write) and `<name.attr>` (a reference that only brings
the root name into the globals summary). `\\<name>` is literal text.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..errors import NaturalParseError

__all__ = [
    "OUTCOME_KINDS",
    "SENTINEL",
    "Program",
    "escape_bindings",
    "parse_program",
    "scan_bindings",
    "strip_sentinel",
    "unresolved_read",
]

SENTINEL = "natural\n"

OUTCOME_KINDS: tuple[str, ...] = ("pass", "return", "break", "continue", "raise")
"""Every outcome kind, in the order prompts list them."""

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_BINDING = re.compile(rf"(\\?)<(:?)({_IDENT}(?:\.{_IDENT})*)>")
_FRONTMATTER_KEYS = frozenset({"deny"})
# `<: total>`: meant as a write binding, but the space makes it plain text; refused instead of ignored.
_SPACED_WRITE = re.compile(rf"(?<!\\)<:\s+({_IDENT}(?:\.{_IDENT})*)\s*>")
# A word of the text that could be a Python name, or the root of a dotted one (`sales` of `sales.amount`).
_WORD = re.compile(rf"(?<![\w.]){_IDENT}")


@dataclass(frozen=True, kw_only=True)
class Program:
    """A parsed Natural program."""

    text: str
    """The program as written, dedented, with its final newline: frontmatter removed, `\\<` escapes resolved."""
    reads: tuple[str, ...]
    """Names of `<name>` read bindings, in order of first appearance."""
    writes: tuple[str, ...]
    """Names of `<:name>` write bindings, in order of first appearance."""
    references: tuple[str, ...]
    """Root names of every unescaped `<name>` and `<name.attr>`: candidates for the globals summary."""
    denied: frozenset[str]
    """Outcome kinds removed by frontmatter."""
    interpolated: tuple[str, ...] = ()
    """Source of each `{...}` field of an f-string block: the secrets its text may hold are looked up there."""

    @property
    def prompt_text(self) -> str:
        """The program as the model sees it: the prompt template gives it lines of its own between markers,
        so its outer blank lines and final newline are dropped there (they would only add empty lines)."""
        return self.text.strip("\n").rstrip()

    @property
    def words(self) -> tuple[str, ...]:
        """Each word of the program text that could name a Python variable (`sales`, and `sales` of
        `sales.amount`), once, in order of first appearance; whether it names one is for the caller to see."""
        return tuple(dict.fromkeys(_WORD.findall(self.prompt_text)))


def strip_sentinel(literal: str) -> str | None:
    """Return the dedented program of a literal that starts with the sentinel line, else `None`."""
    if not literal.startswith(SENTINEL):
        return None
    return textwrap.dedent(literal[len(SENTINEL) :])


def parse_program(text: str, *, filename: str | None = None, line: int | None = None) -> Program:
    """Parse a program (sentinel already removed): frontmatter, then bindings.

    Args:
        text: The dedented program, after f-string interpolation when the block is an f-string.
        filename: Source file, for error messages.
        line: Line of the block's first program line in `filename`, for error messages.

    Raises:
        NaturalParseError: Malformed frontmatter or an invalid binding.
    """
    body, denied = _split_frontmatter(text, filename=filename, line=line)
    if not body.strip():
        raise NaturalParseError(
            "the Natural block has no program" + (" after its frontmatter" if body != text else "")
            + "; write what the step should do after the `natural` line",
            filename=filename,
            line=line,
        )
    spaced = _SPACED_WRITE.search(body)
    if spaced is not None:
        raise NaturalParseError(
            f"`{spaced.group(0)}` has a space after `<:`; write the binding as `<:{spaced.group(1)}>` "
            f"(or `\\{spaced.group(0)}` for literal text)",
            filename=filename,
            line=_line_of(body, spaced.start(), line),
        )
    reads: dict[str, None] = {}
    writes: dict[str, None] = {}
    references: dict[str, None] = {}
    pieces: list[str] = []
    position = 0
    for match in _BINDING.finditer(body):
        escaped, write, path = match.groups()
        if escaped:
            # `\<name>` is literal text: drop the backslash, bind nothing.
            pieces.append(body[position : match.start()])
            pieces.append(match.group(0)[1:])
            position = match.end()
            continue
        root = path.split(".", 1)[0]
        if write:
            if "." in path:
                raise NaturalParseError(
                    f"write binding `<:{path}>` must be a plain name; "
                    f"assign attributes with `nh_assign` and bind `<:{root}>` or read `<{root}>` instead",
                    filename=filename,
                    line=_line_of(body, match.start(), line),
                )
            writes.setdefault(root, None)
            continue
        references.setdefault(root, None)
        if "." not in path:
            reads.setdefault(root, None)
    pieces.append(body[position:])
    return Program(
        text="".join(pieces),
        reads=tuple(reads),
        writes=tuple(writes),
        references=tuple(references),
        denied=denied,
    )


_UNESCAPED_BINDING = re.compile(rf"(?<!\\)<(:?{_IDENT}(?:\.{_IDENT})*)>")


def escape_bindings(text: str) -> str:
    """Escape `<name>`-shaped text so that interpolated data is never read as a binding."""
    return _UNESCAPED_BINDING.sub(r"\\<\1>", text) if "<" in text else text


def scan_bindings(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Read and write binding names in `text`, without validating anything (for f-string literal parts)."""
    reads: dict[str, None] = {}
    writes: dict[str, None] = {}
    for escaped, write, path in _BINDING.findall(text):
        if escaped or "." in path:
            continue
        (writes if write else reads).setdefault(path, None)
    return tuple(reads), tuple(writes)


def _line_of(text: str, offset: int, first_line: int | None) -> int | None:
    return None if first_line is None else first_line + text.count("\n", 0, offset)


def _split_frontmatter(text: str, *, filename: str | None, line: int | None) -> tuple[str, frozenset[str]]:
    lines = text.split("\n")
    first = next((i for i, candidate in enumerate(lines) if candidate.strip()), None)
    if first is None or lines[first].strip() != "---":
        return text, frozenset()

    def error(message: str, at: int) -> NaturalParseError:
        return NaturalParseError(message, filename=filename, line=None if line is None else line + at)

    if lines[first] != "---":
        raise error("frontmatter delimiter must be exactly `---` (no indentation or trailing spaces)", first)
    closing = next((i for i in range(first + 1, len(lines)) if lines[i].strip() == "---"), None)
    if closing is None:
        raise error("frontmatter opened with `---` is never closed by a second `---` line", first)
    if lines[closing] != "---":
        raise error("frontmatter delimiter must be exactly `---` (no indentation or trailing spaces)", closing)

    import yaml  # only programs with frontmatter pay for the YAML parser

    try:
        data = yaml.safe_load("\n".join(lines[first + 1 : closing]))
    except yaml.YAMLError as exc:
        raise error(f"frontmatter is not valid YAML: {exc}", first + 1) from exc
    if not isinstance(data, dict):
        raise error(f"frontmatter must be a YAML mapping with a `deny` list, got {type(data).__name__}", first + 1)
    unknown = sorted(set(map(str, data)) - _FRONTMATTER_KEYS)
    if unknown:
        raise error(f"unknown frontmatter key(s) {unknown}; the only key is `deny`", first + 1)
    if "deny" not in data:
        raise error("frontmatter must contain `deny` (a list of outcome kinds to forbid)", first + 1)
    deny = data["deny"]
    if not isinstance(deny, list) or not all(isinstance(kind, str) for kind in deny):
        raise error(f"`deny` must be a list of outcome kinds, got {deny!r}", first + 1)
    unknown_kinds = sorted(set(deny) - set(OUTCOME_KINDS))
    if unknown_kinds:
        raise error(
            f"`deny` names unknown outcome kind(s) {unknown_kinds}; choose from {list(OUTCOME_KINDS)}", first + 1
        )
    return "\n".join(lines[closing + 1 :]), frozenset(deny)


def unresolved_read(
    error: NameError,
    reads: Sequence[str] = (),
    bound: Collection[str] = (),
    variables: Collection[str] = (),
) -> NameError:
    """Python's NameError for a read binding, with a hint saying why the name has no value.

    `reads` are the block's read bindings in order, `bound` the names the function has assigned so far and
    `variables` every variable of the function and of the enclosing function. A variable that exists but
    is not assigned yet gets that said; any other name may be text such as `<li>`, not meant as a binding.
    """
    # Python names the variable for a global or free variable, but not for an unassigned local
    # (`UnboundLocalError.name` is None): that is the first read local the function has not bound yet.
    name = error.name or next(read for read in reads if read in variables and read not in bound)
    if name in variables:
        hint = f"`<{name}>` in the Natural block names a variable not assigned yet when the block runs; assign it first"
    else:
        hint = f"if `<{name}>` in the Natural block is text, not a variable, escape it as `\\<{name}>`"
    hinted = type(error)(f"{error}; {hint}")
    hinted.name = name
    return hinted
