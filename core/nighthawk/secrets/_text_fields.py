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
caller's rule, passed in. Also here: where the words of the face's other field rules start in a text
(`word_matches`). Imports nothing of ours, and is loaded when the first text is scrubbed, so
`import nighthawk` loads no more than it did.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache

__all__ = ["config_fields", "is_ascii_alnum", "may_name_a_credential", "word_matches"]


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regex compiled on first use."""
    return lru_cache(maxsize=1)(lambda: re.compile(pattern, flags))


_KEY = r"[A-Za-z_][\w.\-]{0,63}"
# A line starts at the start of the text, after a line break, or after an escaped one (`\n` in rendered JSON).
_LINE_START = r"(?:^|(?<=\\n))"
# A quoted value: JSON's and Python's escapes are skipped, so an escaped quote does not end it.
_QUOTED = r"\"(?:[^\"\\\r\n]|\\.)*\"|'(?:[^'\\\r\n]|\\.)*'"
# An unquoted value after `=`: up to `;`, the end of the line (or an escaped `\n`), a `#` comment after a
# space, a backtick (prose quoting code: "`export KEY=...`"), or a space or `&` before the next `key=`
# (`host=db password=x port=5432`, `a=1&b=2`).
_BARE = (
    r"(?:[^;\r\n\"' \t\\&#`]|\\(?![nr])|#(?<!\s#)|&(?![\w.\-%]+=)"
    r"|[\"'](?![ \t]*(?:[,:}\])]|$))|[ \t]+(?![ \t]|;|#|$|\\n|[\w.\-]+[ \t]*=)){1,256}"
)
# (At most 256 pieces: a value is read from each credential key, and a long line of `,password=x,...` must
# not make each read run to its end.)
# JSON or a Python literal, from the key's opening quote (possibly escaped), which also closes it.
_JSON = _lazy(
    rf"(?P<q>\\?[\"'])(?P<key>{_KEY})(?P=q)[ \t]*:[ \t]*(?P<vq>\\?[\"'])(?P<value>(?:[^\\\r\n]|\\.){{1,512}}?)(?P=vq)"
)
# YAML, from the start of the key's line: the key first on it (or after a list's `- `), one value to its end.
_YAML = _lazy(
    rf"{_LINE_START}[ \t]*(?:-[ \t]+)?(?P<q>[\"']?)(?P<key>{_KEY})(?P=q)[ \t]*:[ \t]+"
    r"(?P<value>\"[^\"\r\n]*\"|'[^'\r\n]*'|(?:[^\s\"'#\\]|\\(?![nr]))(?:[^\s\\]|\\(?![nr]))*)"
    r"(?=[ \t]*(?:#[^\r\n]*)?(?:$|\\[nr]))",
    re.MULTILINE,
)
# `key=value`, `key = value`, `export KEY=value`, `--api-key=value`: from a key where a name can start.
_ASSIGNMENT = _lazy(
    rf"(?:{_LINE_START}|(?<=[\s;(,{{\-\"']))(?P<key>{_KEY})[ \t]*=[ \t]*(?P<value>{_QUOTED}|{_BARE})", re.MULTILINE
)
# `-u user:password`, `--user=user:password`.
_USER = _lazy(r"(?<![\w\-])(?:-u[ \t]*|--user(?:[ \t]+|=))(?P<q>[\"']?)(?P<user>[^\s:\"']+):(?P<value>[^\s\"']+)(?P=q)")
_ANY_KEY = _lazy(rf"(?<![\w.\-]){_KEY}(?=\\?[\"']?[ \t]*[:=])")
# The rest of a key after a word in it, then a `:` or `=` (after a quote and spaces).
_AFTER_KEY = _lazy(r"(?P<rest>[\w.\-]{0,64})\\?[\"']?[ \t]*[:=]")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
# Code: names of letters joined by dots, maybe called or indexed by a quoted key (what follows is not read).
_CODE = _lazy(r"[A-Za-z_]+(?:\.[A-Za-z_]+)*(?:\(|\[\\?[\"'])[^\r\n]*|[A-Za-z_]+(?:\.[A-Za-z_]+)+[)\]},]*")
# Lower-cases ASCII letters only, so positions in the lowered text are those of the text.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def unquoted(value: str) -> str:
    """`value` without the quotes around it (plain or escaped)."""
    for quote in ('\\"', "\\'", '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return value[len(quote) : -len(quote)]
    return value


def _may_be_value(value: str) -> bool:
    """Whether `value` can be a value at all: not nothing, a YAML block marker, a reference to another
    variable (`$DB_PASSWORD`, `${TOKEN}`) or code that gets one (`os.environ["API_KEY"]`, `get_token()`,
    `settings.api_token`). Masked code would differ from what a model wrote, and not replay."""
    value = value.strip()
    if not value or value.lower() in _NOT_A_VALUE or value.startswith("$"):
        return False
    return _CODE().fullmatch(value) is None


def config_fields(
    text: str,
    lowered: str,
    is_name: Callable[[str], bool],
    is_credential: Callable[[str, str], bool],
    *,
    every_key: bool = False,
) -> list[tuple[int, int]]:
    """The spans of the values in `text` (`lowered`: the same, lower case) kept under a key for which
    `is_name(key)` and `is_credential(key, value)` hold (the value without its quotes; curl's user is asked
    for as `password`).

    Unless `every_key` (for name patterns of the user's own), only the keys holding a default credential
    word are tried (`_NAME_HINTS`): a prompt is full of `key: value` text that no credential name keys.
    """
    if len(lowered) != len(text):  # lower-casing changed some character's length: positions differ
        lowered = text.translate(_ASCII_LOWER)
    spans = []
    if every_key:
        starts = [match.start() for match in _ANY_KEY().finditer(text) if is_name(match.group(0))]
    else:
        starts = _key_starts(text, lowered, is_name)
    yaml_at: dict[int, re.Match[str] | None] = {}  # one YAML reading per line, however many keys it holds
    covered = -1  # the end of the last `key=value` read: a key inside that value was read with it
    for start in sorted(starts):
        if start < covered:
            continue
        head = _line_head(text, start)
        if head not in yaml_at:
            yaml_at[head] = _YAML().match(text, head)
        assignment = _ASSIGNMENT().match(text, start)
        if assignment is not None and assignment.start("key") == start:
            covered = assignment.end()
        patterns = [assignment, yaml_at[head]]
        if start and text[start - 1] in "\"'":
            patterns.append(_JSON().match(text, start - 2 if start > 1 and text[start - 2] == "\\" else start - 1))
        for match in patterns:
            if match is not None and match.start("key") == start:
                # A trailing backslash escapes what follows (`\"` in rendered JSON): it stays, or the text breaks.
                found, inner = match.group("value"), unquoted(match.group("value")).rstrip("\\")
                if _may_be_value(inner) and is_credential(match.group("key"), inner):
                    start_of_value = match.start("value") + (len(found) - len(unquoted(found))) // 2  # quotes stay
                    spans.append((start_of_value, start_of_value + len(inner)))
    for match in word_matches(_USER(), text, lowered, ("-u", "--user")):
        user, password = match.group("user"), match.group("value")
        # `docker run -u 1000:1000` is a user and group id.
        if user.isdigit() and password.isdigit():
            continue
        if _may_be_value(password) and is_credential("password", password):
            spans.append(match.span("value"))
    return spans


def _key_starts(text: str, lowered: str, is_name: Callable[[str], bool]) -> list[int]:
    """Where the keys holding a credential word start, for those `is_name` takes and a `:` or `=` follows
    (after a quote and spaces)."""
    starts = set()
    after_key = _AFTER_KEY()
    for hint in _NAME_HINTS:
        for position in _occurrences(lowered, hint):
            after = after_key.match(text, position + len(hint))
            if after is None:  # most of prose: "token count", "the key is"
                continue
            start = position
            while start > 0 and position - start < 64 and text[start - 1] in _KEY_CHARS:
                start -= 1
            while start < position and text[start] not in _KEY_FIRST:
                start += 1
            if text[start] in _KEY_FIRST and is_name(text[start : after.end("rest")]):
                starts.add(start)
    return sorted(starts)


def _line_head(text: str, start: int) -> int:
    """Where the line of the key at `start` starts, if only indentation, a list's `- ` or a quote precede it."""
    head = start
    while head > 0 and start - head < 64 and text[head - 1] in " \t-\"'":
        head -= 1
    return head


# Every default credential name holds one of these: text holding none (and no curl `-u`) keys no credential.
_NAME_HINTS = ("pass", "pw", "key", "token", "secret", "cred", "auth", "cookie", "sess", "bearer", "jwt", "dsn")
_NAME_HINTS += ("salt", "pin", "otp", "sid", "sas", "sig", "refresh")
# Values of a configuration key that are no credential: nothing, a placeholder for one, a YAML block marker.
_NOT_A_VALUE = frozenset({"null", "none", "nil", "true", "false", "~", "|", ">", "|-", ">-", "{}", "[]"})


def may_name_a_credential(lowered: str) -> bool:
    return any(hint in lowered for hint in _NAME_HINTS) or "-u" in lowered


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
