"""Secrets: what counts as one, finding them in a step's data, and masking them in everything a step sends.

This package face holds the rules, what counts as a secret: credential names, credential shapes, and text
too ordinary to be either (`ContextRedaction`, public as `nighthawk.ContextRedaction`; `nighthawk.redaction`
re-exports it with the default patterns). The rules know nothing else of ours and import nothing heavy, so
every module below can use them; which long random-looking runs are credentials, and which public values
only look like one, is `_random`'s, which the rules use. The other modules, each with one job, lowest
first: `_values` (finding the secret values inside data), `_scrubber` (a step's secret values and the
scrubber every outgoing text passes through), `_model` (the pydantic-ai model wrapper that scrubs every
request; imported only when an executor builds its model) and `_code` (secrets in code shown to a person,
masked only inside its string literals; imported by confirm mode).

The rules:

* a *name* rule: a binding, dict key, dataclass field or attribute whose name holds a credential word as a
  whole part (`openai_api_key`, `authToken`, `db_password`) is shown as the placeholder in rendered context;
* a *shape* rule: text that looks like a credential wherever it appears (a provider's key format such as
  `sk-...` or `ghp_...`, a JWT, a PEM private key, the password of a URL, a long random-looking token) is
  replaced by the placeholder.

A value found under a credential name is a secret to mask in *all* outgoing text only when it is not
ordinary text (`looks_ordinary`): `password = "hunter2-blue"` is, `api_key = "string"` or `token = 3` is
not, since masking every `string` or `3` would rewrite far more than the secret. `_scrubber` collects
those values and masks them, and their simple derived forms, wherever the step sends them.
"""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ._random import TOKEN_BYTES, TOKEN_RUN, is_random_token, random_tokens

__all__ = [
    "DEFAULT_MASK_NAME_PATTERNS",
    "DEFAULT_MASK_VALUE_PATTERNS",
    "ContextRedaction",
    "looks_ordinary",
]

# Each pattern is matched case-insensitively against the *whole* of one word part of a name, and against
# each pair of neighbouring parts written together. Parts come from splitting on `_`, `-`, digits and
# camelCase, so `OPENAI_API_KEY` gives `openai`, `api`, `key` (plus the pairs `openaiapi`, `apikey`).
# Whole-part matching keeps `keyboard`, `author`, `tokens` and `max_tokens` visible. A bare `key` is not a
# credential word (`sort_key`, `primary_key`, `key_column` name data); a key is one with a qualifier that
# says so (`api_key`, `access_key`, `secret_key`, `private_key`, ...).
DEFAULT_MASK_NAME_PATTERNS: tuple[str, ...] = (
    r"(?:api|access|secret|private|priv|signing|client|master|encryption|license|ssh|session|auth|app|service"
    r"|account|admin|root|deploy|webhook|write|subscription|hmac)keys?",
    r"token",
    r"(?:access|refresh|auth|id|api|bearer|session|csrf|xsrf)tokens?",
    r"secrets?",
    r"(?:pg)?passw(?:or)?[dt]s?",  # `passwort` is German
    r"(?:pg)?pass|passe",  # French `mot_de_passe`
    r"pins?|otp|sid|sas|sig|refresh",  # whole parts, and only last (see `_SHORT_WORDS`)
    r"pwd",
    r"pw",
    r"passcodes?",
    r"passphrase",
    r"credentials?",
    r"creds?",
    r"o?auth",
    r"authorization",
    r"cookies?",
    r"sessionids?",
    r"sessid",
    r"bearer",
    r"jwt",
    r"dsn",
    r"salt",
)

# A Discord bot token is one run of at least 58 letters, digits, `_`, `-` and dots: one scan finds a text that
# may hold one (its nine possible first letters, tested as literals, cost a scan each).
_DOTTED_TOKEN_TABLE = bytes(
    ord("a") if byte in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-." else ord(" ")
    for byte in range(256)
)


def _long_dotted_run(text: str) -> bool:
    return "." in text and b"a" * 58 in text.encode("utf-8", "surrogatepass").translate(_DOTTED_TOKEN_TABLE)


# Credential shapes issued by common providers, each with the literal texts one of which any match holds
# (`None`: the bearer pattern, found by a case-insensitive test; a function: a test of its own). Only the patterns whose literal is in a
# text are run on it: running them all at every position of every tool result, prompt and event costs
# several times more. Lookbehinds keep the scheme visible where that helps the reader (`Bearer <masked>`,
# `postgres://<masked>@host`).
_PROVIDER_PATTERNS: tuple[tuple[str, tuple[str, ...] | Callable[[str], bool] | None], ...] = (
    (r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),  # OpenAI and Anthropic
    (r"\bAIza[0-9A-Za-z_\-]{35}", ("AIza",)),  # Google API keys
    (r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),  # AWS access key ids
    (r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", ("_live_", "_test_")),  # Stripe
    (r"\bglpat-[A-Za-z0-9_\-]{20,}", ("glpat-",)),  # GitLab
    (r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),  # Hugging Face
    (r"\bnpm_[A-Za-z0-9]{36}", ("npm_",)),  # npm
    (r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", ("pypi-",)),  # PyPI
    (r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", ("SG.",)),  # SendGrid
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", ("xox",)),  # Slack
    (r"(?i:(?<=bearer ))[A-Za-z0-9._~+/\-]{16,}=*", None),  # HTTP bearer credentials
    (r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", ("eyJ",)),  # JWT
    # A PEM private key; the block may have been cut before its END line by a caller's budget.
    (r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*\Z)", ("-----BEGIN",)),
    # Discord bot tokens: the base64 of the bot's numeric id (so `MT`, `Nz`, `OD`... for its first digit), a
    # timestamp and an HMAC, joined by dots.
    (r"(?<![\w\-])(?:M[Tjz]|N[DTjz]|O[DT])[A-Za-z0-9]{21,25}\.[\w\-]{6}\.[\w\-]{27,38}(?![\w\-])", _long_dotted_run),
    # user:password in a URL; the password runs to the last `@` before the host, as URL parsers read it.
    (r"(?<=://)[^/\s:@]+:[^/\s?#'\"\\`]+(?=@)", ("://",)),
)
DEFAULT_MASK_VALUE_PATTERNS: tuple[str, ...] = tuple(pattern for pattern, _ in _PROVIDER_PATTERNS)

# The shortest credential any default pattern recognises; shorter text skips the regex scan entirely.
SHORTEST_CREDENTIAL_CHARS = 16
# Only this many leading characters of a name are split into parts; dict keys can be arbitrarily long.
_MAX_NAME_CHARS = 128
# `mask_value` only tests whole strings up to this size (a PEM RSA-4096 key is about 3,300 characters).
_MAX_WHOLE_VALUE_CHARS = 8_192

def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regex compiled on first use: compiling the rules' regexes at import would add about a millisecond
    to `import nighthawk`."""
    return lru_cache(maxsize=1)(lambda: re.compile(pattern, flags))


_WORD_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_A-Za-z]+")


@lru_cache(maxsize=64)
def _name_matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


@lru_cache(maxsize=256)  # keyed by the subsets of patterns `_patterns_in` picks, a few dozen in practice
def _value_matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns))


# A part after the credential word that says what *kind* of thing the name holds names something about a
# credential, not the credential itself: `token_url`, `password_file`, `HF_TOKEN_PATH`, `SSH_AUTH_SOCK`,
# `AUTH_MODE`, `api_key_name`, `password_policy`, `token_budget`, `token_type_ids`, `jwt_algorithm`,
# `auth_provider`, `auth_enabled`. (`id` is not one of them: `session_id` is a credential; nor is `hash`:
# `password_hash` can be cracked.)
_DESCRIPTOR_PARTS = frozenset(
    "url urls uri uris path paths dir dirs directory folder file files filename name names type types kind mode"
    " domain host hostname port endpoint sock socket count counts limit limits size sizes length lengths len"
    " ttl expiry expires expiration timeout format header prefix suffix scope scopes env var version"
    " policy policies budget budgets ids index idx offsets mapping mask usage used algorithm algorithms alg"
    " provider providers method methods enabled disabled required rounds strategy backend flow level status"
    " rule rules pattern regex issuer audience hint hints banner consent santa label labels tooltip question".split()
)

# Short credential words that are parts of innocent names too (`pass_rate`, `pin_memory`, `sig_filter`): one
# counts only last in a name (`pin`, `user_pin`, `PGPASS`) or before a part naming the value (`PIN_CODE`).
_SHORT_WORDS = frozenset("pass pgpass pin pins otp sid sas sig refresh".split())
_VALUE_PARTS = frozenset("code codes number num no value val".split())

# A `token` after one of these is a token of text, as a tokenizer's special tokens are named (`pad_token`,
# `bos_token_id`, `mask_token`).
_TEXT_TOKEN_PARTS = frozenset("pad bos eos unk cls sep mask special added stop start end image audio video".split())

# Every step asks again about the same variable, field and environment names (a notebook namespace holds
# thousands): remember the answers.
@lru_cache(maxsize=65_536)
def _name_matches(patterns: tuple[str, ...], name: str) -> bool:
    """Whether a pattern names a word part of `name` (or two neighbouring parts written together) that no
    descriptor part follows."""
    matcher = _name_matcher(patterns)
    if matcher is None:
        return False
    words = _WORD_PARTS.findall(name[:_MAX_NAME_CHARS])
    last = -1  # the last part a credential word ends at
    for i, word in enumerate(words):
        if i and word.lower() == "token" and words[i - 1].lower() in _TEXT_TOKEN_PARTS:
            continue  # `pad_token`, `eos_token_id`: a token of text
        if matcher.fullmatch(word) or (i and matcher.fullmatch(words[i - 1] + word)):
            if word.lower() in _SHORT_WORDS and any(later.lower() not in _VALUE_PARTS for later in words[i + 1 :]):
                continue  # `pin_memory`, `pass_rate`: the short word is not the credential here
            last = i
    return last >= 0 and not any(word.lower() in _DESCRIPTOR_PARTS for word in words[last + 1 :])


# The credential words that name something a person chooses: a word, a number, anything can be one of those.
# A one-time password is digits, so it counts among them too.
_CHOSEN = _lazy(r"(?:pg)?pass(?:w(?:or)?[dt]s?|e)?|pwd|pw|passcodes?|passphrases?|secrets?|pins?|otp", re.IGNORECASE)
# A setting's value, never a generated key or token: lower-case words joined by `_` with at most three
# trailing digits (`google`, `oauth2`, `client_credentials`), a capitalised word (`Basic`), or a short
# upper-case name (`HS256`, `S256`). Mixed-case letters can be random, and stay masked.
_ENUM_WORD = _lazy(r"[a-z]{1,12}(?:_[a-z]{1,12})*\d{0,3}|[A-Z][a-z]{0,11}|[A-Z]{1,6}\d{0,3}")
_MAX_ENUM_WORD_CHARS = 24
# A collection under a credential name is tested item by item, up to this many items.
_MAX_ITEMS_TESTED = 256
_LEAST_LISTED_WORDS = 3
# An integer this big under a key's name can be the key itself (a private key as a number) or a numeric
# session id; smaller ones are counts, sizes and flags.
_KEY_SIZED_INTEGER = 2**32


@lru_cache(maxsize=4_096)
def _names_a_chosen_secret(name: str) -> bool:
    return any(_CHOSEN().fullmatch(word) for word in _WORD_PARTS.findall(name[:_MAX_NAME_CHARS]))


@lru_cache(maxsize=4_096)
def _names_a_short_credential(name: str) -> bool:
    return any(word.lower() in _SHORT_WORDS for word in _WORD_PARTS.findall(name[:_MAX_NAME_CHARS]))


def could_be_credential(name: str, value: object) -> bool:
    """Whether `value`, found under the credential name `name`, can be a credential at all.

    `None`, a boolean or an empty string cannot. Under a name for something a person chooses (a password, a
    passcode, a secret) anything else can. Under any other credential name (a key, a token, `auth`, `salt`)
    neither a number (`salt=16`, `token=3`) nor a short word (`auth="basic"`, `token="bearer"`) can: keys and
    tokens are generated. An integer of more than 32 bits can (a private key or a session id as a number).
    A compiled regex cannot (`token_re` finds tokens); a list, tuple or set of three items or more can when one
    of its items can (`token_list` of words is data, of keys is not).
    """
    if value is None or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
        return False
    if isinstance(value, re.Pattern):
        return False  # `token_re`: code that finds tokens, never one
    if _names_a_chosen_secret(name):
        return True
    if isinstance(value, list | tuple | set | frozenset) and len(value) >= _LEAST_LISTED_WORDS:
        # `token_list = ["the", "a", ...]` holds words; a key among them still makes the whole a credential.
        # A pair can be a login (`auth = ("ann", "hunter")`): it stays masked.
        return any(could_be_credential(name, item) for item in itertools.islice(value, _MAX_ITEMS_TESTED))
    if not isinstance(value, (str, bytes)) and _names_a_short_credential(name):
        return False  # `sig = np.array(...)` is a signal, `sid = 42` a row: a signature or session id is text
    if isinstance(value, int):
        return abs(value) >= _KEY_SIZED_INTEGER
    if isinstance(value, float):
        return False
    if isinstance(value, str):
        return not (len(value) <= _MAX_ENUM_WORD_CHARS and _ENUM_WORD().fullmatch(value))
    return True


def _patterns_in(patterns: tuple[str, ...], text: str) -> tuple[str, ...]:
    """The patterns of `patterns` that may match in `text` (decided cheaply for the default patterns)."""
    if len(text) < SHORTEST_CREDENTIAL_CHARS or not patterns:
        return ()
    if patterns != DEFAULT_MASK_VALUE_PATTERNS:
        return patterns
    bearer: bool | None = None
    chosen = []
    for pattern, anchors in _PROVIDER_PATTERNS:
        if anchors is None:
            if bearer is None:
                bearer = "bearer " in text.lower()
            if bearer:
                chosen.append(pattern)
        elif callable(anchors):
            if anchors(text):
                chosen.append(pattern)
        elif any(anchor in text for anchor in anchors):
            chosen.append(pattern)
    return tuple(chosen)


# --- credentials inside structured text, whatever their name -----------------------------------------------

# The password field of a connection string (`Server=db;User Id=app;Password=...;`, `PWD=...`, libpq's
# `host=db password=...`, `PGPASSWORD=...`): a quoted value whole, else up to `;`, the end of the line, the
# next `key=`, or a quote that closes the string the connection string sits in (`"...;Password=x"}` in
# rendered JSON). A `PWD=` followed by a path is the working directory of a shell. A key in a URL's query
# (`?db_password=`) is left to the query rule below, which ends the value at `&`.
_CONNECTION_FIELD = _lazy(
    r"(?:password|pwd(?![ \t]*=[ \t]*[/~]))[ \t]*=[ \t]*(?P<secret>"
    r"\"(?:[^\"\r\n]|\"\")*\"|'(?:[^'\r\n]|'')*'|\{(?:[^}\r\n]|\}\})*\}"
    r"|(?:[^;\r\n\"' \t]|[\"'](?![ \t]*(?:[,:}\])]|$))|[ \t]+(?![ \t]|;|$|[\w.\-]+[ \t]*=))+)",
    re.IGNORECASE | re.MULTILINE,
)
# A parameter of a URL's query or fragment (`?api_key=...`, `&sig=...`, `#access_token=...`, and `&amp;token=`
# in HTML); its name, percent-decoded, is judged by `_is_credential_parameter`.
_QUERY_FIELD = _lazy(r"[?&#](?:amp;)?(?P<name>[A-Za-z0-9_.\-%+\[\]]{1,64})=(?P<secret>[^&#\s\"'<>\\]+)")
# Parameter names that are credentials in URLs though not in Python names: a bare `key` (Google's `?key=`),
# and a request signature (Azure's `sig=`, `X-Amz-Signature=`, `X-Goog-Signature=`).
_QUERY_WORDS = frozenset({"key", "sig", "signature"})
# The value of an HTTP `Authorization` header, wherever it is written: `Basic <base64 of user:password>`,
# `Bearer <token>`, `Token <token>` (a space, a tab or `%20` after the scheme).
_AUTHORIZATION = _lazy(r"(?P<scheme>basic|bearer|token)(?:[ \t]+|%20)(?P<secret>[A-Za-z0-9._~+/\-]+=*)", re.IGNORECASE)
_PERCENT = _lazy(r"%([0-9A-Fa-f]{2})")
# What stands before `password=` when it is the end of a URL query's key (`?db_password=`, `&password=`).
_QUERY_KEY_BEFORE = _lazy(r"[?&#][\w.%\-]*\Z")
# `Bearer` and `Token` values shorter than this, or plain words, are prose ("token ids", "Bearer tokens").
_SHORTEST_SCHEME_TOKEN = 16
_SHORTEST_BEARER_TOKEN = 8
# The shortest text any of the three rules masks a credential of: `Basic YTpi` (`a:b`), `pwd=abcdef`.
_SHORTEST_FIELD_TEXT = 10


def percent_decoded(text: str) -> str:
    """`text` with its `%XX` escapes decoded (`+` kept: it is a space only in form bodies)."""
    if "%" not in text:
        return text
    return _PERCENT().sub(lambda match: chr(int(match.group(1), 16)), text)


def basic_credentials(token: str) -> str | None:
    """The `user:password` a `Basic` token encodes (standard or URL-safe base64), or `None`."""
    padded = token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 4)
    try:
        decoded = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded if ":" in decoded and decoded.isprintable() else None


def _scheme_token(scheme: str, token: str) -> bool:
    """Whether `token`, written after the `Authorization` scheme `scheme`, is a credential."""
    if scheme == "basic":
        return basic_credentials(token) is not None
    if len(token) < (_SHORTEST_BEARER_TOKEN if scheme == "bearer" else _SHORTEST_SCHEME_TOKEN):
        return False  # most of prose: "token count", "Bearer tokens"
    plain_word = _ENUM_WORD().fullmatch(token) is not None and not any(c.isdigit() for c in token)
    if scheme == "bearer":
        return len(token) >= _SHORTEST_SCHEME_TOKEN or (len(token) >= _SHORTEST_BEARER_TOKEN and not plain_word)
    # `token` starts much prose ("token 2048 of 4096"): a credential mixes letters and digits.
    return len(token) >= _SHORTEST_SCHEME_TOKEN and any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _credential_fields(text: str, redaction: ContextRedaction) -> list[tuple[int, int]]:
    """The spans of the credentials inside connection strings, URL queries and `Authorization` values of
    `text`, in order, overlapping ones merged."""
    if len(text) < _SHORTEST_FIELD_TEXT:  # rendering scrubs every dict key and short string: leave at once
        return []
    # Where text keeps a field is its own module, loaded when the first text is scrubbed.
    from ._text_fields import config_fields, is_ascii_alnum, word_matches

    lowered = text.lower()
    spans: list[tuple[int, int]] = []
    if "=" in text:
        for match in word_matches(_CONNECTION_FIELD(), text, lowered, ("password", "pwd")):
            if not _QUERY_KEY_BEFORE().search(text, max(0, match.start() - _MAX_NAME_CHARS), match.start()):
                spans.append(match.span("secret"))
    if "=" in text and ("?" in text or "&" in text or "#" in text):
        for match in _QUERY_FIELD().finditer(text):
            name = percent_decoded(match.group("name"))
            value = match.group("secret")
            if _is_credential_parameter(name, redaction) and could_be_credential(name, percent_decoded(value)):
                spans.append(match.span("secret"))
    for match in word_matches(_AUTHORIZATION(), text, lowered, ("basic", "bearer", "token")):
        start = match.start()
        if (start == 0 or not is_ascii_alnum(text[start - 1])) and _scheme_token(
            match.group("scheme").lower(), match.group("secret")
        ):
            spans.append(match.span("secret"))
    every_key = redaction.mask_name_patterns is not DEFAULT_MASK_NAME_PATTERNS  # the user's own credential words
    if ":" in text or "=" in text:  # configuration text: only keys holding a credential word are tried
        judge = lambda key, value: _is_config_credential(key, value, redaction)  # noqa: E731
        spans += config_fields(text, lowered, redaction.is_sensitive_name, judge, every_key=every_key)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _is_config_credential(key: str, value: str, redaction: ContextRedaction) -> bool:
    """Whether `value`, written under `key` in configuration text, is a credential: the key is a credential
    name that hides it, and it is not ordinary text (`token: bearer`, `PWD=/home/me`, `password: string`),
    which, met in a value the step reads, would be masked in every text sent."""
    return value != redaction.placeholder and not looks_ordinary(value) and redaction.hides(key, value)


def _is_credential_parameter(name: str, redaction: ContextRedaction) -> bool:
    return (_is_url_credential_word(name) and name not in redaction.allow_names) or redaction.is_sensitive_name(name)


@lru_cache(maxsize=4_096)
def _is_url_credential_word(name: str) -> bool:
    words = _WORD_PARTS.findall(name[:_MAX_NAME_CHARS])
    return name.lower() in _QUERY_WORDS or bool(words and words[-1].lower() in ("sig", "signature"))


# Every default shape and field rule needs one of these: a `=` (connection strings, URL queries), `://` (a
# URL's password), an `Authorization` scheme word, or else a run of at least 10 token characters (a
# PEM's `-----BEGIN`, a JWT's first part; provider keys and random tokens are longer). Checked first, so
# that the thousand short texts of a table row or a list of sentences skip every regex.
_WIDE_TOKEN_BYTES = TOKEN_BYTES | frozenset(b".~%")
_WIDE_TOKEN_TABLE = bytes(ord("a") if byte in _WIDE_TOKEN_BYTES else ord(" ") for byte in range(256))
_SHORTEST_SHAPE_RUN = b"a" * 10


def may_hold_credential(text: str) -> bool:
    """Whether `text` can hold a credential any default shape or field rule masks (a cheap test, no regex)."""
    if "=" in text or "://" in text:
        return True
    lowered = text.lower()
    if ":" in text:
        from ._text_fields import may_name_a_credential  # loaded when the first text is scrubbed

        if may_name_a_credential(lowered):
            return True
    if "bearer" in lowered or "basic" in lowered or "token" in lowered:
        return True
    return _SHORTEST_SHAPE_RUN in text.encode("utf-8", "surrogatepass").translate(_WIDE_TOKEN_TABLE)


# Ordinary text: a word or an identifier (`string`, `nighthawk`, `created_at`) or a number. Such a value is
# not a secret even under a credential name: masking it wherever it occurs would rewrite unrelated text.
_WORDLIKE = re.compile(r"[^\W\d_]+(?:_[^\W\d_]+)*")
# Shorter values are not secrets to mask everywhere: every `abc12` of all outgoing text would go.
SHORTEST_SECRET_CHARS = 6


# Also ordinary: a URL without user info or query (`https://oauth2.example.com/token`; a password or a
# `?access_token=` stays secret), an absolute or home path without spaces (`/run/user/1000/ssh.sock`,
# `~/.cache/hf/token`) and an ISO date or time (`2026-11-25`, `2026-11-25T08:30:00Z`). They are where a
# credential lives or when it expires; masked everywhere, they would rewrite every link and path that
# shares their prefix.
_PLAIN_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@?#]+(?:/[^\s@?#]*)?")
_PLAIN_PATH = re.compile(r"(?:~|/)[^\s@?#:]*")
_ISO_TIME = re.compile(
    r"(?:\d{4}-\d{2}-\d{2})?(?:(?:^|[T ])\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)


# Also ordinary: a serial identifier, a short letter prefix, a separator and groups of digits (`s-000123`,
# `user_42`, `order-2024-001`). `hunter2-blue-42` is not one (a word holds a digit), nor is a PIN such as
# `7391-4482` (no prefix). Words joined by hyphens are not ordinary on their own: `quartz-lantern` under
# `secret` is a passphrase. (A table column of such words is data; see `_values.CredentialColumn`.)
_SERIAL = re.compile(r"[^\W\d_]{1,8}[-_.:#/ ]\d+(?:[-_.:/]\d+)*")
# Text of at most 4 distinct characters carries at most log2(4) = 2 bits per character (`aaaa-aaaa`,
# `xx-xx-xx-xx`, `00000000`): far below a password's, and counted faster than its entropy is measured.
_FEW_CHARACTERS = 4


def looks_ordinary(text: str) -> bool:
    """Whether `text` is too ordinary to be masked wherever it occurs: short, a number, a word or identifier,
    a serial identifier, text of at most 4 distinct characters, a plain URL or path, a date or time."""
    stripped = text.strip()
    if len(stripped) < SHORTEST_SECRET_CHARS or _WORDLIKE.fullmatch(stripped):
        return True
    if len(set(stripped)) <= _FEW_CHARACTERS or _SERIAL.fullmatch(stripped):
        return True
    if _PLAIN_URL.fullmatch(stripped) or _PLAIN_PATH.fullmatch(stripped) or _ISO_TIME.fullmatch(stripped):
        return True
    try:
        float(stripped.replace("_", ""))
    except ValueError:
        return False
    return True


@dataclass(frozen=True, kw_only=True)
class ContextRedaction:
    """Rules that mask sensitive names and credential-looking text in rendered context."""

    enabled: bool = True
    """Whether any masking happens; `False` passes every name and value through unchanged."""

    mask_name_patterns: tuple[str, ...] = DEFAULT_MASK_NAME_PATTERNS
    """Regexes matched case-insensitively against whole word parts of a name (see the module notes)."""

    allow_names: tuple[str, ...] = ()
    """Exact names that are never masked, even when a pattern matches them."""

    extra_mask_names: tuple[str, ...] = ()
    """Exact names that are always masked."""

    mask_value_patterns: tuple[str, ...] = DEFAULT_MASK_VALUE_PATTERNS
    """Regexes for credential-looking substrings, replaced wherever they occur in rendered text."""

    mask_random_tokens: bool = True
    """Whether long random-looking tokens (32+ characters mixing cases and digits) count as credentials."""

    mask_credential_fields: bool = True
    """Whether credentials inside structured text count as credentials whatever their name: the password of
    a connection string, a credential-named parameter of a URL's query, an `Authorization` value."""

    placeholder: str = "<masked>"
    """Text shown instead of a masked value."""

    def __post_init__(self) -> None:
        for field_name in ("mask_name_patterns", "allow_names", "extra_mask_names", "mask_value_patterns"):
            value = getattr(self, field_name)
            if isinstance(value, str):
                raise TypeError(f"`ContextRedaction.{field_name}` must be a tuple of strings, got {value!r}")
            object.__setattr__(self, field_name, tuple(value))
        for field_name, compile_ in (("mask_name_patterns", _name_matcher), ("mask_value_patterns", _value_matcher)):
            if getattr(self, field_name) in (DEFAULT_MASK_NAME_PATTERNS, DEFAULT_MASK_VALUE_PATTERNS):
                continue  # ours compile; done on first use, not whenever a configuration is made (`%load_ext`: 2-3 ms)
            try:
                compile_(getattr(self, field_name))
            except re.error as exc:
                raise ValueError(f"`ContextRedaction.{field_name}` holds an invalid regex: {exc}") from exc

    def is_sensitive_name(self, name: str) -> bool:
        """Return whether the value bound to `name` should be masked."""
        if not self.enabled or name in self.allow_names:
            return False
        if name in self.extra_mask_names:
            return True
        return _name_matches(self.mask_name_patterns, name)

    def hides(self, name: str, value: object) -> bool:
        """Whether `value`, bound to `name`, is shown as the placeholder: `name` is sensitive and `value` can
        be a credential (`auth_enabled=True`, `salt=16`, `token="bearer"` are shown; see
        `could_be_credential`). A name matched only by your own patterns or `extra_mask_names` hides any value.
        """
        if not self.is_sensitive_name(name):
            return False
        if name in self.extra_mask_names or not _name_matches(DEFAULT_MASK_NAME_PATTERNS, name):
            return True
        return could_be_credential(name, value)

    def scrub_text(self, text: str) -> str:
        """Replace every credential-looking substring of `text` with the placeholder.

        The scan is linear in `len(text)`; callers pass text they have already cut to their budget.
        """
        return self._replace_credentials(text, [])

    def credential_parts(self, text: str) -> list[str]:
        """The credential-shaped substrings of `text` (what `scrub_text` would replace)."""
        found: list[str] = []
        self._replace_credentials(text, found)
        return found

    def _replace_credentials(self, text: str, found: list[str]) -> str:
        """`text` with its credential-shaped substrings replaced by the placeholder, each appended to `found`."""
        if not self.enabled:
            return text
        if self.mask_value_patterns is DEFAULT_MASK_VALUE_PATTERNS and not may_hold_credential(text):
            return text
        placeholder = self.placeholder

        def masked(piece: str) -> str:
            found.append(piece)
            return placeholder  # returned by a function, so backslashes in the placeholder stay literal

        if self.mask_credential_fields:
            for start, end in reversed(_credential_fields(text, self)):
                text = text[:start] + masked(text[start:end]) + text[end:]
        matcher = _value_matcher(_patterns_in(self.mask_value_patterns, text))
        if matcher is not None:
            text = matcher.sub(lambda match: masked(match.group(0)), text)
        if self.mask_random_tokens:
            for start, end in reversed(random_tokens(text, self._holds_credential)):
                text = text[:start] + masked(text[start:end]) + text[end:]
        return text

    def _holds_credential(self, text: str) -> bool:
        """Whether `text` (the decoded base64 of a payload) holds a credential these rules mask."""
        return self.scrub_text(text) != text

    def mask_value(self, name: str | None, value: object) -> object:
        """Return the placeholder when `name` hides `value` (see `hides`) or `value` is wholly a credential,
        else `value`.

        The value is returned as is (never copied); only strings of bounded size are tested as a whole.
        """
        if not self.enabled:
            return value
        if name is not None and self.hides(name, value):
            return self.placeholder
        if isinstance(value, str) and SHORTEST_CREDENTIAL_CHARS <= len(value) <= _MAX_WHOLE_VALUE_CHARS:
            matcher = _value_matcher(self.mask_value_patterns)
            stripped = value.strip()
            if matcher is not None and matcher.fullmatch(stripped):
                return self.placeholder
            if self.mask_random_tokens and TOKEN_RUN.fullmatch(stripped) and is_random_token(stripped, self._holds_credential):
                return self.placeholder
        return value
