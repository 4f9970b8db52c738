"""Token counting: one deterministic measure for prompt budgets, exact counts for reports.

The rule: every budget that decides what a prompt holds (how much of a value a preview keeps, which entries a
summary lists, where `<snipped>` goes) is measured with `estimate_tokens`, a pure function of the text. The
prompt a step sends is therefore the same on every machine, whether or not tiktoken's vocabulary can be
loaded there, and a replay store recorded on one machine matches requests made on any other. Nothing on the
prompt path imports tiktoken, so no download is attempted and no fallback warning can appear in a notebook
cell.

Exact counts are still available for measuring and reporting (`get_token_counter`): tiktoken downloads a
vocabulary the first time an encoding is used, with no timeout, and on a machine without network access that
fails. We load lazily, remember the outcome per encoding for the whole process, and, unless the caller asked
for strictness, fall back to the estimate with a single warning. These counts never feed back into a prompt.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import NighthawkError
from ._token_tables import ONE_TOKEN_CJK

__all__ = [
    "BUDGET_COUNTER",
    "DEFAULT_ENCODING",
    "ENVIRONMENT_VARIABLE",
    "ESTIMATE_NAME",
    "NighthawkTokenizerWarning",
    "TokenCounter",
    "estimate_tokens",
    "get_token_counter",
    "measuring_counter",
]

DEFAULT_ENCODING = "o200k_base"
ESTIMATE_NAME = "estimate"

_logger = logging.getLogger("nighthawk")

# Above this many characters even a loaded tokenizer is not asked: encoding megabytes of text only to size
# a prompt would cost seconds, and every caller cuts its text far below this anyway.
_MAX_EXACT_CHARS = 200_000
# Text longer than this is estimated on a leading sample instead of being scanned whole.
_SAMPLE_CHARS = 65_536


class NighthawkTokenizerWarning(UserWarning):
    """The tokenizer vocabulary could not be loaded, so token budgets are estimated."""


class TokenCounter(Protocol):
    """Counts the tokens of a text for budgeting."""

    @property
    def name(self) -> str:
        """The tiktoken encoding name, or `"estimate"` when counts are estimated."""
        ...

    def count(self, text: str) -> int:
        """Return the number of tokens of `text` (exact or estimated)."""
        ...


def estimate_tokens(text: str) -> int:
    """Estimate the token count of `text` from its characters, within reach of o200k_base's real count.

    Calibrated against o200k_base (`tests/core/test_token_estimate.py`): on every kind of text there (numbers,
    JSON, code, prose in Latin, Cyrillic, Arabic and CJK scripts, emoji, base64, whitespace, URLs) it lands
    between 0.9 and 1.5 times the real count, so budgets measured with it hold in the model's real tokens and
    a preview budget keeps about as much of a Russian or Japanese text as of an English one. Older encodings
    (cl100k_base) split non-Latin scripts into up to 2.5 times as many tokens; budgets do not follow them.
    Text longer than `_SAMPLE_CHARS` is measured on a leading sample and scaled, so the cost stays flat.
    """
    n = len(text)
    if n > _SAMPLE_CHARS:
        return -(-_class_cost(text[:_SAMPLE_CHARS]) * n // _SAMPLE_CHARS)
    # Only an exact `str` is remembered: hashing and comparing it runs no user code.
    return _remembered_cost(text) if n <= _REMEMBERED_CHARS and type(text) is str else _class_cost(text)


# Every step of a map measures the same texts again (the rendering of a value it shares with the others, the
# fixed parts of the prompt): the cost of a short text is remembered, by the text itself.
_REMEMBERED_CHARS = 4_096


@functools.lru_cache(maxsize=2_048)
def _remembered_cost(text: str) -> int:
    return _class_cost(text)


# What o200k_base makes of each kind of character, counted with one regex pass per kind (C speed). A Latin
# word (accents included) up to 8 letters is one token, a longer one one per 4 letters as long compounds
# split, and each accented letter adds half a token; digits go in groups of 3; a run of ASCII punctuation is
# one token and 0.6 per character past the second (`":`, `}],` are single tokens), and a single one glued to the
# word after it (`(items`, `/path`, `?id`) half a token less; a space joins the word after it but not a
# digit, other whitespace is a token per run; a long run of mixed-case letters (base64, ids) is about 0.75
# tokens a letter. Other alphabets (Cyrillic, Greek, Arabic, Hebrew, Indic, Thai) cost a token per 4
# letters of a word; a common Han character or Hangul syllable (`_token_tables.py`) 0.65, a rare one 2;
# kana 0.75; any other 2- or 3-byte character 1 and a 4-byte one (emoji) 1.8. `_SCALE` covers what varies,
# so every kind of text of `tests/core/test_token_estimate.py` lands between 0.9 and 1.5 of the real count.
_WORD_LETTERS = "a-z\u00df-\u00f6\u00f8-\u024f"
_WORDS = re.compile(
    rf"[A-Z\u00c0-\u00de]?[{_WORD_LETTERS}]{{1,8}}(?![{_WORD_LETTERS}])|[A-Z\u00c0-\u00de]?[{_WORD_LETTERS}]{{1,4}}|[A-Z\u00c0-\u00de]{{1,3}}"
)
_ACCENTED = re.compile("[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]")
_DIGITS = re.compile(r"[0-9]{1,3}")
_SPACES = re.compile(r" {2,}|\n+|\t+|\r+|[^\S \n\t\r]| (?=[0-9])")
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]+")
_PUNCTUATION_CHARACTER = re.compile(r"[!-/:-@\[-`{-~]")
_PUNCTUATION_PAIRS = re.compile(r"[!-/:-@\[-`{-~]{2,}")
_GLUED = re.compile(r"(?<![!-/:-@\[-`{-~])[(/\[.=?_@#$-](?=[A-Za-z])")
_LETTER_RUNS = re.compile(r"[A-Za-z]{16,}")
_ALPHABET_WORDS = re.compile("[\u0370-\u052f\u0530-\u06ff\u0750-\u077f\u0900-\u0dff\u0e00-\u0e7f\u10a0-\u10ff]+")
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]")
_COMMON_CJK = re.compile(f"[{ONE_TOKEN_CJK}]")
_KANA = re.compile("[\u3040-\u30ff]")
_OTHER = re.compile("[\u0080-\u00bf\u00d7\u00f7\u0250-\u036f\u0800-\u08ff\u0e80-\u2fff\u3000-\u303f\u3100-\u33ff\ua000-\uabff\ud7a4-\uffff]")
_FOUR_BYTES = re.compile("[\U00010000-\U0010ffff]")
_SCALE = 1.15
_UPPER_LETTERS = dict.fromkeys(range(ord("A"), ord("Z") + 1))


def _class_cost(text: str) -> int:
    if not text:
        return 0
    cost: float = sum(len(pattern.findall(text)) for pattern in (_WORDS, _DIGITS, _SPACES))
    runs, pairs = len(_PUNCTUATION.findall(text)), len(_PUNCTUATION_PAIRS.findall(text))
    cost += 0.4 * runs + 0.6 * len(_PUNCTUATION_CHARACTER.findall(text)) - 0.6 * pairs - 0.5 * len(_GLUED.findall(text))
    for run in _LETTER_RUNS.findall(text):
        upper = len(run) - len(run.translate(_UPPER_LETTERS))  # the run is ASCII letters: counted in C
        if len(run) <= 4 * upper <= 3 * len(run):  # mixed case throughout: random text, not camelCase words
            cost += max(0.0, 0.75 * len(run) - len(_WORDS.findall(run)))
    if not text.isascii():
        cost += 0.5 * len(_ACCENTED.findall(text)) + sum(-(-len(word) // 4) for word in _ALPHABET_WORDS.findall(text))
        cjk, common = len(_CJK.findall(text)), len(_COMMON_CJK.findall(text))
        cost += 0.65 * common + 2 * (cjk - common) + 0.75 * len(_KANA.findall(text))
        cost += len(_OTHER.findall(text)) + 1.8 * len(_FOUR_BYTES.findall(text))
    # Rounded, not raised: one character is one token; at least one for any text.
    return max(1, int(cost * _SCALE + 0.5))


@dataclass(frozen=True, kw_only=True)
class _EstimatingCounter:
    """Counter used when no tokenizer could be loaded."""

    name: str = ESTIMATE_NAME
    """Always `"estimate"`."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)


@dataclass(frozen=True, kw_only=True)
class _TiktokenCounter:
    """Counter backed by a loaded tiktoken encoding."""

    name: str
    """The encoding name, for example `o200k_base`."""

    encoding: Any
    """The `tiktoken.Encoding`; typed loosely so this module never imports tiktoken at import time."""

    def count(self, text: str) -> int:
        if len(text) > _MAX_EXACT_CHARS:
            return estimate_tokens(text)
        # `encode_ordinary` treats text such as "<|endoftext|>" as plain text instead of raising.
        return len(self.encoding.encode_ordinary(text))


_lock = threading.Lock()
_loaded: dict[str, TokenCounter] = {}
_failures: dict[str, BaseException] = {}
_warned: set[str] = set()
_ESTIMATE = _EstimatingCounter()

BUDGET_COUNTER: TokenCounter = _ESTIMATE
"""The counter of every budget that shapes a prompt: the estimate, identical on every machine."""


ENVIRONMENT_VARIABLE = "NIGHTHAWK_TOKENIZER"
"""Encoding `get_token_counter` measures with when none is named (`estimate` skips tiktoken). Prompts never
depend on it."""


def _resolve_encoding_name(encoding: str | None, model_name: str | None) -> str:
    encoding = encoding or os.environ.get(ENVIRONMENT_VARIABLE) or None
    if encoding:
        return encoding
    if model_name:
        try:
            from tiktoken.model import (
                encoding_name_for_model,  # a table lookup; it never downloads
            )
        except ImportError:
            return DEFAULT_ENCODING
        # Accept a full `provider:model` string as well as a bare model name.
        bare = model_name.split(":", 1)[-1]
        try:
            return encoding_name_for_model(bare)
        except KeyError:
            return DEFAULT_ENCODING
    return DEFAULT_ENCODING


def unknown_encoding(name: str) -> str | None:
    """Why `name` names no tiktoken encoding, or `None` when it does (or is `"estimate"`).

    Only tiktoken's registry of names is read: no vocabulary is loaded and nothing touches the network.
    """
    if name == ESTIMATE_NAME:
        return None
    import tiktoken

    known = tiktoken.list_encoding_names()
    if name in known:
        return None
    return (
        f"`tokenizer_encoding` {name!r} is not a tiktoken encoding; use one of {sorted(known)!r}, "
        f"{ESTIMATE_NAME!r} or `None`"
    )


def _load(name: str) -> TokenCounter:
    """Load `name` with tiktoken; an unknown name is the caller's mistake and raises at once."""
    import tiktoken

    problem = unknown_encoding(name)
    if problem is not None:
        raise NighthawkError(problem)
    return _TiktokenCounter(name=name, encoding=tiktoken.get_encoding(name))


def _report_fallback(name: str, exc: BaseException) -> None:
    detail = str(exc)
    if len(detail) > 200:
        detail = detail[:200] + "…"
    message = (
        f"Could not load the tiktoken encoding {name!r} ({type(exc).__name__}: {detail}); token counts are "
        f"estimated from their characters (prompts are unaffected: their budgets are "
        "always estimated). To count exactly without network access, "
        "place the vocabulary file in the folder named by the TIKTOKEN_CACHE_DIR environment variable or "
        "choose a cached encoding with `tokenizer_encoding`; set `strict_tokenizer=True` to raise instead."
    )
    _logger.warning(message)
    # stacklevel 4 points past this helper, get_token_counter and its direct caller.
    warnings.warn(message, NighthawkTokenizerWarning, stacklevel=4)


def get_token_counter(
    encoding: str | None = None, *, model_name: str | None = None, strict: bool = False
) -> TokenCounter:
    """Return a counter for measuring text exactly, loading the tiktoken encoding on first use.

    For reports and benchmarks only: prompt budgets always use `BUDGET_COUNTER`, so what this returns (which
    depends on whether the vocabulary can be loaded here) never changes a prompt.

    Args:
        encoding: A tiktoken encoding name such as `o200k_base`; `None` derives it from `model_name`.
        model_name: Model name (with or without a `provider:` prefix) used when `encoding` is `None`; an
            unknown model falls back to `o200k_base`.
        strict: Raise instead of estimating when the vocabulary cannot be loaded.

    Returns:
        A counter whose `name` is the encoding name, or `"estimate"` after a failed load.

    Raises:
        NighthawkError: `encoding` is not a tiktoken encoding, or the load failed and `strict` is true.
    """
    name = _resolve_encoding_name(encoding, model_name)
    if name == ESTIMATE_NAME:
        return _ESTIMATE
    with _lock:
        counter = _loaded.get(name)
        if counter is not None:
            return counter
        failure = _failures.get(name)
        if failure is None:
            try:
                counter = _load(name)
            except NighthawkError:
                raise
            except Exception as exc:  # offline: requests.ConnectionError; also a missing or broken tiktoken
                failure = _failures[name] = exc
            else:
                _loaded[name] = counter
                return counter
        warn = not strict and name not in _warned
        if warn:
            _warned.add(name)
    if strict:
        raise NighthawkError(
            f"the tiktoken encoding {name!r} could not be loaded ({type(failure).__name__}); place its "
            "vocabulary in the folder named by TIKTOKEN_CACHE_DIR, or set `strict_tokenizer=False` to "
            "estimate token counts"
        ) from failure
    if warn:
        _report_fallback(name, failure)
    return _ESTIMATE


class _TokenizerSettings(Protocol):
    """The settings `measuring_counter` reads: a `StepExecutorConfiguration` has them."""

    @property
    def tokenizer_encoding(self) -> str | None: ...
    @property
    def model_name(self) -> str: ...
    @property
    def strict_tokenizer(self) -> bool: ...


def measuring_counter(configuration: _TokenizerSettings) -> TokenCounter:
    """The counter `configuration` asks exact counts to be measured with (`tokenizer_encoding`, its model,
    `strict_tokenizer`); for reports such as benchmarks, never for a prompt."""
    return get_token_counter(
        configuration.tokenizer_encoding, model_name=configuration.model_name or None, strict=configuration.strict_tokenizer
    )


def _clear_cache() -> None:
    """Forget every loaded encoding and every failure (tests use this to start from a clean process)."""
    with _lock:
        _loaded.clear()
        _failures.clear()
        _warned.clear()
