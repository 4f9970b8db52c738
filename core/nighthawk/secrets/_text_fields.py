"""Where configuration text keeps a value under a key: the places the package face's rules read a credential
from when the key is a credential name, whatever the variable holding the text is called.

* JSON and Python literals: `"password": "..."`, `'api_key': '...'` (also with escaped quotes, as in a
  string rendered inside JSON);
* YAML: `password: ...` at the start of a line (a quoted value, or one run of non-space characters up to
  the end of the line or a `#` comment);
* INI, TOML, dotenv, shell and keyword arguments: `api_key = ...`, `OPENAI_API_KEY=...`,
  `export GITHUB_TOKEN=...`, `connect(token="...")`;
* the user of curl and its kin: `-u user:password`, `--user user:password` (the password only).

Only the places are found here; whether a key names a credential and whether its value can be one is the
caller's rule, passed in. Imports nothing of ours, and is loaded on the first text that may hold such a key,
so `import nighthawk` stays as light as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache

__all__ = ["config_fields", "is_ascii_alnum", "may_name_a_credential", "word_matches"]

_KEY = r"[A-Za-z_][\w.\-]{0,63}"
# A line starts at the start of the text, after a line break, or after an escaped one (`\n` in rendered JSON).
_LINE_START = r"(?:^|(?<=\\n))"
# A quoted value: JSON's and Python's escapes are skipped, so an escaped quote does not end it.
_QUOTED = r"\"(?:[^\"\\\r\n]|\\.)*\"|'(?:[^'\\\r\n]|\\.)*'"
# An unquoted value after `=`: up to `;`, the end of the line (or an escaped `\n`), a `#` comment after a
# space, or a space or `&` before the next `key=` (`host=db password=x port=5432`, `a=1&b=2`).
_BARE = (
    r"(?:[^;\r\n\"' \t\\&#]|\\(?![nr])|#(?<!\s#)|&(?![\w.\-%]+=)"
    r"|[\"'](?![ \t]*(?:[,:}\])]|$))|[ \t]+(?![ \t]|;|#|$|\\n|[\w.\-]+[ \t]*=))+"
)
_FIELDS = (
    # JSON or a Python literal; the key's quote, possibly escaped, also ends it.
    rf"(?P<jq>\\?[\"'])(?P<jkey>{_KEY})(?P=jq)[ \t]*:[ \t]*(?P<jvq>\\?[\"'])(?P<jvalue>(?:[^\\\r\n]|\\.){{1,512}}?)(?P=jvq)",
    # YAML: the key first on its line (or after a list's `- `), one value to the end of the line.
    rf"{_LINE_START}[ \t]*(?:-[ \t]+)?(?P<yq>[\"']?)(?P<ykey>{_KEY})(?P=yq)[ \t]*:[ \t]+"
    r"(?P<yvalue>\"[^\"\r\n]*\"|'[^'\r\n]*'|(?:[^\s\"'#\\]|\\(?![nr]))(?:[^\s\\]|\\(?![nr]))*)"
    r"(?=[ \t]*(?:#[^\r\n]*)?(?:$|\\[nr]))",
    # `key=value`, `key = value`, `export KEY=value`: a key where a name can start.
    rf"(?:{_LINE_START}|(?<=[\s;(,{{]))(?:export[ \t]+)?(?P<akey>{_KEY})[ \t]*=[ \t]*(?P<avalue>{_QUOTED}|{_BARE})",
    # `-u user:password`, `--user=user:password`.
    r"(?<![\w\-])(?:-u[ \t]*|--user(?:[ \t]+|=))(?P<uq>[\"']?)(?P<user>[^\s:\"']+):(?P<uvalue>[^\s\"']+)(?P=uq)",
)


@lru_cache(maxsize=1)
def _fields() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{field})" for field in _FIELDS), re.MULTILINE)


def unquoted(value: str) -> str:
    """`value` without the quotes around it (plain or escaped)."""
    for quote in ('\\"', "\\'", '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return value[len(quote) : -len(quote)]
    return value


def _may_be_value(value: str) -> bool:
    """Whether `value` can be a value at all: not nothing, a YAML block marker or a reference to another
    variable (`$DB_PASSWORD`, `${TOKEN}`)."""
    return bool(value.strip()) and value.lower() not in _NOT_A_VALUE and not value.startswith("$")


def config_fields(text: str, is_credential: Callable[[str, str], bool]) -> list[tuple[int, int]]:
    """The spans of the values in `text` kept under a key for which `is_credential(key, value)` holds (the
    value without its quotes; curl's user is asked for as `password`)."""
    spans = []
    for match in _fields().finditer(text):
        for key, value in (("jkey", "jvalue"), ("ykey", "yvalue"), ("akey", "avalue")):
            if match.group(key) is not None:
                found, inner = match.group(value), unquoted(match.group(value))
                if _may_be_value(inner) and is_credential(match.group(key), inner):
                    start = match.start(value) + (len(found) - len(inner)) // 2  # the quotes stay
                    spans.append((start, start + len(inner)))
                break
        else:
            user, password = match.group("user"), match.group("uvalue")
            # `docker run -u 1000:1000` is a user and group id.
            if not (user.isdigit() and password.isdigit()) and _may_be_value(password) and is_credential("password", password):
                spans.append(match.span("uvalue"))
    return spans


# Every default credential name holds one of these (or is curl's `-u`): text holding none has no credential key.
_NAME_HINTS = ("pass", "pw", "key", "token", "secret", "cred", "auth", "cookie", "sess", "bearer", "jwt", "dsn")
_NAME_HINTS += ("salt", "pin", "otp", "sid", "sas", "sig", "refresh", "-u", "--user")
# Values of a configuration key that are no credential: nothing, a placeholder for one, a YAML block marker.
_NOT_A_VALUE = frozenset({"null", "none", "nil", "true", "false", "~", "|", ">", "|-", ">-", "{}", "[]"})


def may_name_a_credential(lowered: str) -> bool:
    return any(hint in lowered for hint in _NAME_HINTS)


def word_matches(pattern: re.Pattern[str], text: str, lowered: str, words: tuple[str, ...]) -> Iterator[re.Match[str]]:
    """The matches of `pattern` (case-insensitive, starting with one of `words`) in `text`, tried only where
    a word starts: scanning a prompt at every position costs several times more."""
    if len(lowered) != len(text):  # lower-casing changed some character's length: positions differ
        yield from pattern.finditer(text)
        return
    # Only where the word is followed by what the pattern needs next (`=` after spaces, or a space).
    starts = sorted(
        start
        for word in words
        for start in _occurrences(lowered, word)
        if lowered[start + len(word) : start + len(word) + 1] in _AFTER_WORD
    )
    end = 0
    for start in starts:
        if start >= end and (match := pattern.match(text, start)) is not None:
            end = match.end()
            yield match


# What may follow a key or scheme word in the patterns `word_matches` runs: spaces, `=`, `%20`.
_AFTER_WORD = frozenset(" \t=%")


def _occurrences(text: str, word: str) -> Iterator[int]:
    start = text.find(word)
    while start >= 0:
        yield start
        start = text.find(word, start + 1)


def is_ascii_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()
