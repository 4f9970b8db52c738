"""The replay store file is safe and cheap: plain data only, named errors, no lost entries, appends, checks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from nighthawk.replay import ReplayModel, ReplayStore, replay_executor
from scripting import Script, finish

PARAMETERS = ModelRequestParameters()
CORE = Path(__file__).resolve().parents[2] / "core"


@nh.natural_function
def doubled(x: int) -> int:
    """natural
    Return twice <x>.
    """


def record_one(store: ReplayStore, question: str, answer: str = "ok") -> None:
    store.record_exchange(
        [ModelRequest(parts=[UserPromptPart(question)])],
        ModelResponse(parts=[TextPart(answer)]),
        model_request_parameters=PARAMETERS,
    )


def replay(path: Path, x: int = 2) -> int:
    with nh.run(replay_executor(path, "replay")):
        return doubled(x)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "module.replay.yaml"


@pytest.fixture
def recorded(store_path: Path) -> Path:
    script = Script([[finish("return", return_expression="x * 2")]])
    with nh.run(replay_executor(store_path, "record", model=FunctionModel(script))):
        assert doubled(2) == 4
    return store_path


# --- plain data only -----------------------------------------------------------------------------------


def alias_bomb() -> str:
    lines = ["format: 1", "exchanges: []", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{level}: &a{level} [{','.join([f'*a{level - 1}'] * 9)}]" for level in range(1, 12)]
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_without_expanding_it(store_path: Path) -> None:
    store_path.write_text(alias_bomb())
    with pytest.raises(nh.NighthawkError, match=r"line 3 uses a YAML anchor or alias; a replay store holds plain data only"):
        len(ReplayStore(store_path))


def test_python_object_tag_is_refused(store_path: Path) -> None:
    store_path.write_text("format: 1\nexchanges:\n- !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(nh.NighthawkError, match=r"line 3 has the YAML tag 'tag:yaml.org,2002:python/object/apply:os.system'"):
        len(ReplayStore(store_path))


def test_a_date_in_a_store_stays_text(recorded: Path) -> None:
    recorded.write_text(re.sub(r"created_with: .*", "created_with: 2024-01-01", recorded.read_text()))
    assert ReplayStore(recorded).exchanges[0].created_with == "2024-01-01"


# --- named errors for hand edits ---------------------------------------------------------------------


def test_entry_with_a_wrong_type_names_the_entry_and_the_key(recorded: Path) -> None:
    recorded.write_text(recorded.read_text().replace("round: 1", "round: first"))
    with pytest.raises(nh.NighthawkError, match=r"exchange 1 \(block '.*:\d+', round 'first'\): `round` must be int, got str"):
        replay(recorded)


def test_entry_missing_its_response_names_the_entry(recorded: Path) -> None:
    text = recorded.read_text()
    recorded.write_text(text[: text.index("  response:")])
    with pytest.raises(nh.NighthawkError, match=r"exchange 1 \(block '.*', round 1\) lacks `response`"):
        replay(recorded)


def test_entry_with_an_unknown_key_names_it(recorded: Path) -> None:
    recorded.write_text(recorded.read_text().replace("  round: 1\n", "  round: 1\n  rnd: 2\n"))
    with pytest.raises(nh.NighthawkError, match=r"exchange 1 .* has unknown keys \['rnd'\]"):
        replay(recorded)


def test_response_that_is_not_a_model_response_names_the_entry(recorded: Path) -> None:
    recorded.write_text(recorded.read_text().replace("kind: response", "kind: answer"))
    with pytest.raises(nh.NighthawkError, match=r"exchange 1 \(block '.*', round 1\) has a `response` that is not a model response"):
        replay(recorded)


def test_store_path_that_is_a_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(nh.NighthawkError, match=r"cannot read the replay store '.*': it is a directory, not a file"):
        replay(tmp_path)


def test_entry_that_is_not_a_mapping_names_its_position(recorded: Path) -> None:
    recorded.write_text(recorded.read_text() + "- just text\n")
    with pytest.raises(nh.NighthawkError, match=r"exchange 2 is a str, expected a mapping"):
        len(ReplayStore(recorded))


# --- concurrent recorders and appends ----------------------------------------------------------------


RECORDER = """
import sys
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from nighthawk.replay import ReplayStore

store = ReplayStore(sys.argv[1])
for index in range(int(sys.argv[3])):
    store.record_exchange(
        [ModelRequest(parts=[UserPromptPart(f"{sys.argv[2]}-{index}")])],
        ModelResponse(parts=[TextPart("ok")]),
        model_request_parameters=ModelRequestParameters(),
    )
"""


def test_two_processes_recording_at_once_lose_no_entry(store_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CORE), os.environ.get("PYTHONPATH", "")])}
    recorders = [
        subprocess.Popen([sys.executable, "-c", RECORDER, str(store_path), name, "80"], env=env, stderr=subprocess.PIPE)
        for name in ("a", "b")
    ]
    errors = [recorder.communicate(timeout=120)[1].decode() for recorder in recorders]
    assert [recorder.returncode for recorder in recorders] == [0, 0], errors
    assert len(ReplayStore(store_path)) == 160


def test_recording_appends_instead_of_rewriting_the_file(store_path: Path) -> None:
    store = ReplayStore(store_path)
    record_one(store, "first")
    before, inode = store_path.read_bytes(), store_path.stat().st_ino
    record_one(store, "second")
    after = store_path.read_bytes()
    assert (store_path.stat().st_ino, after[: len(before)]) == (inode, before)
    assert len(after) > len(before)


def test_a_later_entry_for_the_same_request_wins(store_path: Path) -> None:
    store = ReplayStore(store_path)
    record_one(store, "question", "old")
    record_one(store, "question", "new")
    (exchange,) = ReplayStore(store_path).exchanges
    assert exchange.response["parts"][0]["content"] == "new"


def test_compact_drops_superseded_entries_and_keeps_the_rest(store_path: Path) -> None:
    store = ReplayStore(store_path)
    for answer in ("old", "new"):
        record_one(store, "question", answer)
    record_one(store, "other")
    store.compact()
    text = store_path.read_text()
    assert (text.count("\n- block: "), "content: old" in text, len(ReplayStore(store_path))) == (2, False, 2)


def test_appending_after_a_hand_edited_layout_still_gives_a_readable_store(store_path: Path) -> None:
    store = ReplayStore(store_path)
    record_one(store, "first")
    text = store_path.read_text()
    # Move `exchanges` before `format`: a valid store whose end is no longer its list of entries.
    head, _, entries = text.partition("exchanges:\n")
    store_path.write_text(head.replace("format: 1\n", "") + "exchanges:\n" + entries + "format: 1\n")
    record_one(ReplayStore(store_path), "second")
    assert len(ReplayStore(store_path)) == 2


# --- writable before any request ---------------------------------------------------------------------


def unreachable(messages, info) -> ModelResponse:
    raise AssertionError("the model must not be asked when the store cannot be written")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_recording_to_an_unwritable_path_fails_before_any_request() -> None:
    with pytest.raises(nh.NighthawkError, match=r"cannot record to the replay store '/proc/nighthawk/x\.yaml': cannot create the folder '/proc/nighthawk'"):
        ReplayModel(FunctionModel(unreachable), "/proc/nighthawk/x.yaml", "record")


@pytest.mark.parametrize("mode", ["record", "auto"])
def test_recording_into_a_broken_store_fails_before_any_request(store_path: Path, mode: str) -> None:
    store_path.write_text(alias_bomb())
    with pytest.raises(nh.NighthawkError, match="uses a YAML anchor or alias"):
        ReplayModel(FunctionModel(unreachable), store_path, mode)


def test_replaying_a_broken_store_fails_when_it_is_plugged_in(store_path: Path) -> None:
    store_path.write_text("format: 1\nexchanges:\n- !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(nh.NighthawkError, match="cannot read the replay store"):
        ReplayModel(None, store_path, "replay")


def test_auto_mode_also_checks_the_store_can_be_written(tmp_path: Path) -> None:
    with pytest.raises(nh.NighthawkError, match=r"cannot record to the replay store '.*': it is a directory"):
        replay_executor(tmp_path, "auto", model=FunctionModel(unreachable))


def test_replay_mode_does_not_need_a_writable_store(recorded: Path) -> None:
    recorded.chmod(0o444)
    assert replay(recorded) == 4


def test_write_check_leaves_no_file_behind(tmp_path: Path) -> None:
    ReplayModel(FunctionModel(unreachable), tmp_path / "new.replay.yaml", "record")
    assert list(tmp_path.iterdir()) == []



def test_text_ending_in_blank_lines_survives_appends_and_compaction(store_path: Path) -> None:
    # YAML keeps such text as a `|+` block, after which PyYAML would end the document with `...`.
    texts = ["ends with blank lines\n\n\n", "next", "also ends\n\n"]
    store = ReplayStore(store_path)
    for text in texts:
        record_one(store, text, text)
    appended = {exchange.response["parts"][0]["content"] for exchange in ReplayStore(store_path).exchanges}
    store.compact()
    compacted = {exchange.response["parts"][0]["content"] for exchange in ReplayStore(store_path).exchanges}
    assert appended == compacted == set(texts)


def test_a_failed_append_leaves_the_store_as_it_was(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ReplayStore(store_path)
    record_one(store, "first")
    before = store_path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(nh.NighthawkError, match=r"cannot record to the replay store '.*': No space left on device"):
        record_one(store, "second")
    monkeypatch.undo()
    assert store_path.read_bytes() == before


def test_store_that_is_a_list_says_so(store_path: Path) -> None:
    store_path.write_text("- format: 1\n")
    with pytest.raises(nh.NighthawkError, match="the file holds a list, not a mapping with `format` and `exchanges`"):
        len(ReplayStore(store_path))
