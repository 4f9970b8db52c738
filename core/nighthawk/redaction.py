"""Masking of sensitive names and credential-looking text before context leaves the process.

Two independent rules decide what is hidden:

* a *name* rule: a binding, dict key, dataclass field or attribute whose name looks sensitive
  (`openai_api_key`, `authToken`, `db_password`) has its value replaced by the placeholder;
* a *value* rule: any substring that looks like a credential (`sk-...`, `ghp_...`, a JWT, a PEM private
  key) is replaced by the placeholder wherever it appears in rendered text.

Both are shallow on purpose: they apply to the text that is actually rendered, which is already bounded, so
masking never walks a whole value. The *values* these rules mark in a step's scope are collected once per
step by `_secrets`, which masks them in everything the step sends out, whatever expression produced them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "DEFAULT_MASK_NAME_PATTERNS",
    "DEFAULT_MASK_VALUE_PATTERNS",
    "ContextRedaction",
]

# Each pattern is matched case-insensitively against the *whole* of one word part of a name, and against
# each pair of neighbouring parts written together. Parts come from splitting on `_`, digits and camelCase,
# so `OPENAI_API_KEY` gives `openai`, `api`, `key` (plus the pairs `openaiapi`, `apikey`). Whole-part
# matching is what keeps `keyboard`, `monkey`, `author` and `tokens_used` visible; the price is that
# `sort_key` or `token_count` are masked too, which `allow_names` can undo.
DEFAULT_MASK_NAME_PATTERNS: tuple[str, ...] = (
    r"key",
    r"(?:api|access|secret|private|signing|client|master|encryption|license|ssh|session|auth)keys?",
    r"token",
    r"(?:access|refresh|auth|id|api|bearer|session|csrf|xsrf)tokens?",
    r"secrets?",
    r"passw(?:or)?ds?",
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

# Credential shapes issued by common providers. Lookbehinds keep the scheme visible where that helps the
# reader (`Bearer <masked>`, `postgres://<masked>@host`).
DEFAULT_MASK_VALUE_PATTERNS: tuple[str, ...] = (
    r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI and Anthropic
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",  # GitHub
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"(?i:(?<=bearer ))[A-Za-z0-9._~+/\-]{16,}=*",  # HTTP bearer credentials
    r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",  # JWT
    # A PEM private key; the block may have been cut before its END line by a caller's budget.
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*\Z)",
    r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)",  # user:password in a URL
)

# Literal text that every default credential pattern needs (the bearer one in any case). Text without any of
# them cannot match, and a few `in` tests are an order of magnitude faster than running the patterns, which
# now happens on every tool result, prompt and event.
_DEFAULT_ANCHORS = (
    "sk-", "AIza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "xox", "eyJ", "-----BEGIN", "://"
)

# The shortest credential any default pattern recognises; shorter text skips the regex scan entirely.
SHORTEST_CREDENTIAL_CHARS = 16
# Only this many leading characters of a name are split into parts; dict keys can be arbitrarily long.
_MAX_NAME_CHARS = 128
# `mask_value` only tests whole strings up to this size (a PEM RSA-4096 key is about 3,300 characters).
_MAX_WHOLE_VALUE_CHARS = 8_192

_WORD_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_A-Za-z]+")


@lru_cache(maxsize=64)
def _name_matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


@lru_cache(maxsize=64)
def _value_matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns))


def _name_parts(name: str) -> tuple[str, ...]:
    parts = _WORD_PARTS.findall(name)
    pairs = [a + b for a, b in zip(parts, parts[1:])]
    return tuple(parts + pairs)


# Every step asks again about the same variable, field and environment names: remember the answers.
@lru_cache(maxsize=4096)
def _name_matches(patterns: tuple[str, ...], name: str) -> bool:
    matcher = _name_matcher(patterns)
    return matcher is not None and any(matcher.fullmatch(part) for part in _name_parts(name[:_MAX_NAME_CHARS]))


def might_hold_credential(patterns: tuple[str, ...], text: str) -> bool:
    """False when `text` certainly holds no match of `patterns` (decided cheaply for the default patterns)."""
    if len(text) < SHORTEST_CREDENTIAL_CHARS or not patterns:
        return False
    if patterns != DEFAULT_MASK_VALUE_PATTERNS:
        return True
    return any(anchor in text for anchor in _DEFAULT_ANCHORS) or "bearer " in text.lower()


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

    placeholder: str = "<masked>"
    """Text shown instead of a masked value."""

    def __post_init__(self) -> None:
        for field_name in ("mask_name_patterns", "allow_names", "extra_mask_names", "mask_value_patterns"):
            value = getattr(self, field_name)
            if isinstance(value, str):
                raise TypeError(f"`ContextRedaction.{field_name}` must be a tuple of strings, got {value!r}")
            object.__setattr__(self, field_name, tuple(value))
        for field_name, compile_ in (("mask_name_patterns", _name_matcher), ("mask_value_patterns", _value_matcher)):
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

    def scrub_text(self, text: str) -> str:
        """Replace every credential-looking substring of `text` with the placeholder.

        The scan is linear in `len(text)`; callers pass text they have already cut to their budget.
        """
        if not self.enabled or not might_hold_credential(self.mask_value_patterns, text):
            return text
        matcher = _value_matcher(self.mask_value_patterns)
        if matcher is None:
            return text
        placeholder = self.placeholder
        # A function replacement keeps backslashes in the placeholder literal.
        return matcher.sub(lambda _match: placeholder, text)

    def mask_value(self, name: str | None, value: object) -> object:
        """Return the placeholder when `name` is sensitive or `value` is wholly a credential, else `value`.

        The value is returned as is (never copied); only strings of bounded size are tested as a whole.
        """
        if not self.enabled:
            return value
        if name is not None and self.is_sensitive_name(name):
            return self.placeholder
        if isinstance(value, str) and SHORTEST_CREDENTIAL_CHARS <= len(value) <= _MAX_WHOLE_VALUE_CHARS:
            matcher = _value_matcher(self.mask_value_patterns)
            if matcher is not None and matcher.fullmatch(value.strip()):
                return self.placeholder
        return value
