"""Prompts and replay stores do not depend on the machine: whether tiktoken's vocabulary loads changes nothing sent.

"Exact tokenizer available" is simulated with a stand-in tiktoken encoding (one token per byte, built offline
from `tests/support/exact_tokenizer`), injected where tiktoken looks encodings up; nothing is downloaded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from nighthawk.prompting import _tokens
from nighthawk.prompting._tokens import estimate_tokens, get_token_counter, measuring_counter
from nighthawk.replay import ReplayMissError, _diff, replay_executor
from scripting import Script, call, finish
from support.exact_tokenizer.tiktoken_ext import openai_public as exact_like

LONG_TEXT = " ".join(f"word{index}" for index in range(1_500))
ROWS = [{"id": index, "region": ["east", "west", "north"][index % 3], "amount": index * 7} for index in range(200)]


@nh.natural_function
def summarise(text: str, rows: list[dict[str, Any]], n: int) -> str:
    """natural
    Read <text>, <rows> and <n>; return a summary.
    """


def rounds() -> list[Any]:
    """A tool round whose result is a long value (tool result budget), then the outcome."""
    return [[call("nh_eval", expression="rows")], [finish("return", return_expression="'done'")]]


@pytest.fixture(autouse=True)
def _user_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # As on a user's machine: no tokenizer setting in the environment, a fresh tokenizer cache.
    monkeypatch.delenv("NIGHTHAWK_TOKENIZER", raising=False)
    monkeypatch.delenv("NIGHTHAWK_REPLAY_MODE", raising=False)
    _tokens._clear_cache()
    yield
    _tokens._clear_cache()


@contextmanager
def exact_tokenizer_available(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tiktoken loads every OpenAI encoding offline, as the one-token-per-byte stand-in."""

    def get_encoding(name: str) -> tiktoken.Encoding:
        return tiktoken.Encoding(**exact_like.ENCODING_CONSTRUCTORS[name]())

    with monkeypatch.context() as patch:
        patch.setattr(tiktoken, "get_encoding", get_encoding)
        patch.setattr(tiktoken, "list_encoding_names", lambda: sorted(exact_like.ENCODING_CONSTRUCTORS))
        _tokens._clear_cache()
        # The injection is live: an exact count is available and differs from the estimate.
        assert get_token_counter("o200k_base", strict=True).count(LONG_TEXT) != estimate_tokens(LONG_TEXT)
        yield
    _tokens._clear_cache()


def sent(script: Script) -> list[str]:
    """Everything the model received, request by request: instructions, prompts, tool results."""
    texts = []
    for info, messages in zip(script.infos, script.seen, strict=True):
        parts = [repr(getattr(part, "content", "")) for message in messages for part in message.parts]
        texts.append(f"{info.instructions}\n{parts}")
    return texts


def run_scripted(**configuration: Any) -> list[str]:
    script = Script(rounds())
    config = nh.StepExecutorConfiguration(model=FunctionModel(script), **configuration)
    with nh.run(nh.AgentStepExecutor.from_configuration(configuration=config)):
        assert summarise(LONG_TEXT, ROWS, 1) == "done"
    return sent(script)


@pytest.mark.parametrize(
    "configuration",
    [{}, {"tokenizer_encoding": "o200k_base", "strict_tokenizer": True}],
    ids=["default-configuration", "exact-encoding-configured"],
)
def test_prompts_are_byte_identical_with_the_estimate_and_an_exact_tokenizer(
    monkeypatch: pytest.MonkeyPatch, configuration: dict[str, Any]
) -> None:
    estimated = run_scripted(tokenizer_encoding="estimate")
    with exact_tokenizer_available(monkeypatch):
        exact = run_scripted(**configuration)
    assert exact == estimated


def test_prompt_path_loads_no_tokenizer_and_warns_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []

    def get_encoding(name: str) -> Any:
        loaded.append(name)
        raise OSError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_scripted()
    assert (loaded, [str(w.message) for w in caught]) == ([], [])


def record(path: Path) -> None:
    with nh.run(replay_executor(path, "record", model=FunctionModel(Script(rounds())))):
        assert summarise(LONG_TEXT, ROWS, 1) == "done"


def replay_summary(path: Path, n: int = 1, **configuration: Any) -> str:
    executor = replay_executor(path, "replay", configuration=nh.StepExecutorConfiguration(**configuration))
    with nh.run(executor):
        return summarise(LONG_TEXT, ROWS, n)


def test_store_recorded_with_the_estimate_replays_where_the_exact_tokenizer_loads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "offline.replay.yaml"
    record(store)
    with exact_tokenizer_available(monkeypatch):
        assert replay_summary(store) == "done"


def test_store_recorded_where_the_exact_tokenizer_loads_replays_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "online.replay.yaml"
    with exact_tokenizer_available(monkeypatch):
        record(store)

    def offline(name: str) -> Any:
        raise OSError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    assert replay_summary(store) == "done"


def test_changed_value_misses_with_a_diff_showing_only_that_value(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = tmp_path / "module.replay.yaml"
    record(store)
    with exact_tokenizer_available(monkeypatch), pytest.raises(ReplayMissError) as miss:
        replay_summary(store, n=2)
    changed = [" ".join(line.split()) for line in str(miss.value).splitlines() if re.match(r"[-+]\s", line)]
    assert changed == ["- n: int = 1", "+ n: int = 2"]


def test_miss_caused_by_a_changed_limit_names_the_setting(tmp_path: Path) -> None:
    store = tmp_path / "module.replay.yaml"
    record(store)
    limits = nh.StepContextLimits(value_max_tokens=50)
    with pytest.raises(
        ReplayMissError, match=r"setting `context_limits\.value_max_tokens`: recorded with 200, now 50"
    ):
        replay_summary(store, context_limits=limits)


def test_miss_caused_by_changed_model_settings_names_them(tmp_path: Path) -> None:
    store = tmp_path / "module.replay.yaml"
    record(store)
    with pytest.raises(ReplayMissError, match=r"model settings: recorded with \{'max_tokens': 4096\}, now \{'max_tokens': 4096, 'temperature': 0\.5\}"):
        replay_summary(store, model_settings={"temperature": 0.5})


def test_miss_after_a_library_upgrade_names_both_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = tmp_path / "module.replay.yaml"
    record(store)
    # A new release whose system prompt gained a sentence.
    monkeypatch.setattr(_diff, "library_versions", lambda: "nighthawk 9.9.9, pydantic-ai 9.9.9")
    with pytest.raises(
        ReplayMissError, match=r"library versions: recorded with nighthawk \S+, pydantic-ai \S+, now nighthawk 9\.9\.9"
    ):
        replay_summary(store, system_prompt_suffix_fragments=("Be brief.",))


def test_miss_caused_by_the_program_lists_no_other_cause(tmp_path: Path) -> None:
    store = tmp_path / "module.replay.yaml"
    record(store)
    with pytest.raises(ReplayMissError) as miss:
        replay_summary(store, n=3)
    assert "Besides the program and the data" not in str(miss.value)


def test_configured_encoding_measures_exactly_while_the_prompt_stays_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    configuration = nh.StepExecutorConfiguration(tokenizer_encoding="o200k_base", strict_tokenizer=True)
    with exact_tokenizer_available(monkeypatch):
        counter = measuring_counter(configuration)
        assert (counter.name, counter.count("hello world")) == ("o200k_base", len(b"hello world"))


def test_stand_in_vocabulary_shadows_tiktoken_in_a_fresh_interpreter() -> None:
    # What `scripts/test.sh` relies on for its second notebook run: the folder first on PYTHONPATH makes every
    # process it starts (the nbval kernels too) load o200k_base offline, one token per byte.
    folder = Path(exact_like.__file__).resolve().parents[1]
    code = "import tiktoken; print(tiktoken.get_encoding('o200k_base').encode_ordinary('hi!'))"
    env = {**os.environ, "PYTHONPATH": str(folder), "TIKTOKEN_CACHE_DIR": ""}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert result.stdout.strip() == "[104, 105, 33]"
