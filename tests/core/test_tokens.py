"""Tests for `nighthawk.prompting._tokens`: lazy loading, the offline fallback and strictness (never the network)."""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import types
import warnings
from pathlib import Path

import pytest
import tiktoken

from nighthawk.prompting import _tokens
from nighthawk.prompting._tokens import NighthawkTokenizerWarning, estimate_tokens, get_token_counter
from nighthawk.errors import NighthawkError

CORE = Path(__file__).resolve().parents[2] / "core"


@pytest.fixture(autouse=True)
def clean_cache(monkeypatch: pytest.MonkeyPatch):
    # These tests exercise encoding resolution itself, so the suite-wide `estimate` default is lifted.
    monkeypatch.delenv("NIGHTHAWK_TOKENIZER", raising=False)
    _tokens._clear_cache()
    yield
    _tokens._clear_cache()


@pytest.fixture
def offline(monkeypatch):
    """Make every vocabulary load fail the way tiktoken fails without network access."""

    def fail(name):
        raise OSError(f"cannot download {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", fail)


@pytest.fixture
def fake_tiktoken(monkeypatch):
    """Make every load succeed with a fake encoding that counts words; records the names loaded."""
    loaded: list[str] = []

    def load(name):
        loaded.append(name)
        return types.SimpleNamespace(encode_ordinary=lambda text: text.split())

    monkeypatch.setattr(tiktoken, "get_encoding", load)
    return loaded


def test_importing_the_module_does_not_import_tiktoken():
    code = "import sys, nighthawk.prompting._tokens; print('tiktoken' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(CORE)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout.strip() == "False"


def test_offline_load_falls_back_to_estimate(offline):
    with pytest.warns(NighthawkTokenizerWarning):
        counter = get_token_counter("o200k_base")
    assert (counter.name, counter.count("abcdefgh")) == ("estimate", 2)


def test_fallback_warning_names_the_fixes(offline):
    fixes = r"TIKTOKEN_CACHE_DIR.*`tokenizer_encoding`.*`strict_tokenizer=True`"
    with pytest.warns(NighthawkTokenizerWarning, match=fixes):
        get_token_counter("o200k_base")


def test_fallback_warns_once_per_encoding(offline):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            get_token_counter("o200k_base")
    assert [type(w.message) for w in caught] == [NighthawkTokenizerWarning]


def test_fallback_logs_one_record_on_nighthawk_logger(offline, caplog):
    with caplog.at_level(logging.WARNING, logger="nighthawk"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        get_token_counter("o200k_base")
        get_token_counter("o200k_base")
    records = [r for r in caplog.records if r.name == "nighthawk"]
    assert len(records) == 1 and "TIKTOKEN_CACHE_DIR" in records[0].getMessage()


def test_strict_load_failure_raises_chained_error(offline):
    with pytest.raises(NighthawkError, match=r"'o200k_base' could not be loaded \(OSError\)") as info:
        get_token_counter("o200k_base", strict=True)
    assert isinstance(info.value.__cause__, OSError)


def test_strict_raises_after_an_earlier_fallback(offline):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        get_token_counter("o200k_base")
    with pytest.raises(NighthawkError, match="strict_tokenizer=False"):
        get_token_counter("o200k_base", strict=True)


def test_unknown_encoding_raises_even_when_not_strict():
    with pytest.raises(NighthawkError, match=r"`tokenizer_encoding` 'o200k' is not a tiktoken encoding"):
        get_token_counter("o200k")


def test_loaded_counter_is_cached(fake_tiktoken):
    assert get_token_counter("cl100k_base") is get_token_counter("cl100k_base")
    assert fake_tiktoken == ["cl100k_base"]


def test_loaded_counter_counts_with_the_encoding(fake_tiktoken):
    counter = get_token_counter("cl100k_base")
    assert (counter.name, counter.count("one two three")) == ("cl100k_base", 3)


@pytest.mark.parametrize(
    ("model_name", "expected"),
    [
        ("gpt-4", "cl100k_base"),
        ("openai-responses:gpt-4o-mini", "o200k_base"),
        ("claude-code-sdk:default", "o200k_base"),
        (None, "o200k_base"),
    ],
)
def test_encoding_is_resolved_from_model_name(fake_tiktoken, model_name, expected):
    assert get_token_counter(model_name=model_name).name == expected


def test_explicit_encoding_wins_over_model_name(fake_tiktoken):
    assert get_token_counter("p50k_base", model_name="gpt-4o").name == "p50k_base"


def test_loaded_counter_estimates_very_long_text(monkeypatch):
    def encode(text):
        raise AssertionError("long text must not be encoded")

    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: types.SimpleNamespace(encode_ordinary=encode))
    assert get_token_counter("o200k_base").count("a" * 4_000_000) == estimate_tokens("a" * 4_000_000)


def test_estimate_of_empty_text_is_zero_and_of_any_text_at_least_one():
    assert [estimate_tokens(""), estimate_tokens("a"), estimate_tokens(" ")] == [0, 2, 2]


def test_estimate_of_long_text_scales_a_sample():
    sample = estimate_tokens("é" * 65_536)
    assert estimate_tokens("é" * 1_000_000) == -(-sample * 1_000_000 // 65_536)


def _o200k_cached() -> bool:
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.exists(os.path.join(folder, hashlib.sha1(url.encode()).hexdigest()))


@pytest.mark.skipif(not _o200k_cached(), reason="o200k_base vocabulary is not in the local tiktoken cache")
def test_cached_vocabulary_counts_exactly():
    counter = get_token_counter("o200k_base", strict=True)
    assert (counter.name, counter.count("hello world")) == ("o200k_base", 2)


def test_estimate_encoding_never_loads_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    def forbidden(name: str) -> None:
        raise AssertionError("tiktoken must not be asked for a vocabulary")

    monkeypatch.setattr(tiktoken, "get_encoding", forbidden)
    assert get_token_counter("estimate").name == "estimate"


def test_environment_variable_sets_the_default_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIGHTHAWK_TOKENIZER", "estimate")
    assert get_token_counter(None, model_name="gpt-4o").name == "estimate"
