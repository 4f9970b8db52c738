"""`%%natural -f`: fill `{expression}` fields from the notebook namespace, as an f-string would.

A field is any Python expression, optionally followed by `!r`/`!s`/`!a` and `:format_spec` (whose own
`{...}` fields are filled first). `{{` and `}}` are literal braces. The scanner tracks brackets and quotes,
so `{d['a:b']}`, `{xs[1:3]}` and `{a != b}` work as they do in an f-string. The fields are evaluated with
the namespace as globals, before the program is parsed, so `<name>` bindings in the result still bind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from IPython.core.error import UsageError

__all__ = ["interpolate"]

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CONVERSIONS = {"r": repr, "s": str, "a": ascii}


def interpolate(template: str, namespace: Mapping[str, Any]) -> str:
    """Return `template` with every `{expression}` replaced by its formatted value.

    Raises:
        UsageError: A brace is unmatched or a field is empty or malformed.
        Exception: Whatever evaluating a field raises (for example `NameError`), unchanged.
    """
    out: list[str] = []
    i, n = 0, len(template)
    while i < n:
        char = template[i]
        if char == "{" and template.startswith("{{", i):
            out.append("{")
            i += 2
        elif char == "}" and template.startswith("}}", i):
            out.append("}")
            i += 2
        elif char == "}":
            raise _error(template, i, "single '}' is not allowed; write '}}' for a literal brace")
        elif char == "{":
            end = _field_end(template, i)
            out.append(_format_field(template[i + 1 : end], namespace, template, i))
            i = end + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _error(template: str, offset: int, message: str) -> UsageError:
    line = template.count("\n", 0, offset) + 1
    return UsageError(f"%%natural -f: {message} (cell line {line})")


def _field_end(template: str, start: int) -> int:
    """Index of the `}` closing the field opened at `start`."""
    depth = 0
    quote: str | None = None
    i = start + 1
    while i < len(template):
        char = template[i]
        if quote is not None:
            if char == "\\":
                i += 1
            elif template.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif char in "'\"":
            quote = char * 3 if template.startswith(char * 3, i) else char
            i += len(quote) - 1
        elif char in _OPEN:
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise _error(template, start, "'{' is never closed; write '{{' for a literal brace")


def _split_field(field: str) -> tuple[str, str | None, str]:
    """Split `expr!c:spec` at the first top-level `!` (not `!=`) or `:`."""
    depth = 0
    quote: str | None = None
    for i, char in enumerate(field):
        if quote is not None:
            if char == quote:
                quote = None
            continue
        if char in "'\"":
            quote = char
        elif char in _OPEN:
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char == "!" and not field.startswith("!=", i):
            rest = field[i + 1 :]
            conversion, _, spec = rest.partition(":")
            return field[:i], conversion, spec
        elif depth == 0 and char == ":":
            return field[:i], None, field[i + 1 :]
    return field, None, ""


def _format_field(field: str, namespace: Mapping[str, Any], template: str, offset: int) -> str:
    expression, conversion, spec = _split_field(field)
    if not expression.strip():
        raise _error(template, offset, "empty expression in '{}'; write '{{}}' for literal braces")
    if conversion is not None and conversion not in _CONVERSIONS:
        raise _error(template, offset, f"conversion {'!' + conversion!r} is not one of '!r', '!s', '!a'")
    try:
        code = compile(expression.strip(), "<%%natural -f>", "eval")
    except SyntaxError as exc:
        raise _error(template, offset, f"{expression.strip()!r} is not a Python expression ({exc.msg})") from exc
    value = eval(code, dict(namespace) if not isinstance(namespace, dict) else namespace)  # noqa: S307 - the user's own notebook
    if conversion is not None:
        value = _CONVERSIONS[conversion](value)
    return format(value, interpolate(spec, namespace) if spec else "")
