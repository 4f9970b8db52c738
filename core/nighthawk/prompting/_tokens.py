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
import math
import os
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import NighthawkError

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
    """Estimate the token count of `text` from its characters, never far below a real tokenizer's count.

    Calibrated against o200k_base and cl100k_base (`tests/core/test_token_estimate.py`) so that it undercounts
    neither by more than 10% on any kind of text (numbers, JSON, code, prose, CJK, emoji, base64, whitespace,
    URLs): budgets measured with it hold in the model's real tokens. It overcounts prose and JSON instead
    (about 1.3 to 1.9 times), which only makes a prompt shorter. Text longer than `_SAMPLE_CHARS` is measured
    on a leading sample and scaled, so the cost stays flat.
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


# What a byte-pair tokenizer makes of each kind of character, counted with one regex pass per kind (C speed).
# A word up to 8 letters is one token (a longer one one per 4 letters, as long compounds split); digits go
# in groups of 3; ASCII punctuation is a token each; a space before a letter joins the word, other
# whitespace is a token per run or per tab/newline; a long run of mixed-case letters (base64, ids) is about
# 0.75 tokens a letter; non-ASCII characters cost by their UTF-8 length. `_SCALE` covers what varies.
_WORDS = re.compile(r"[A-Z]?[a-z]{1,8}(?![a-z])|[A-Z]?[a-z]{1,4}|[A-Z]{1,3}")
_DIGITS = re.compile(r"[0-9]{1,3}")
_SPACES = re.compile(r"[^\S ]| {2,}| (?![A-Za-z])")
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")
_LETTER_RUNS = re.compile(r"[A-Za-z]{16,}")
_TWO_BYTES = re.compile("[\u0080-\u07ff]")
_THREE_BYTES = re.compile("[\u0800-\uffff]")
_FOUR_BYTES = re.compile("[\U00010000-\U0010ffff]")
_SCALE = 1.15
_UPPER_LETTERS = dict.fromkeys(range(ord("A"), ord("Z") + 1))


def _class_cost(text: str) -> int:
    cost: float = sum(len(pattern.findall(text)) for pattern in (_WORDS, _DIGITS, _SPACES, _PUNCTUATION))
    for run in _LETTER_RUNS.findall(text):
        upper = len(run) - len(run.translate(_UPPER_LETTERS))  # the run is ASCII letters: counted in C
        if len(run) <= 4 * upper <= 3 * len(run):  # mixed case throughout: random text, not camelCase words
            cost += max(0.0, 0.75 * len(run) - len(_WORDS.findall(run)))
    if not text.isascii():
        cost += len(_TWO_BYTES.findall(text)) + 2.25 * len(_THREE_BYTES.findall(text)) + 3 * len(_FOUR_BYTES.findall(text))
    return math.ceil(cost * _SCALE)


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
