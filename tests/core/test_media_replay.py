"""Media and the ways out: secrets masking leaves their bytes whole, replay stores keep them by hash."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
import yaml
from pydantic_ai.messages import BinaryContent, ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk import events
from media_samples import png, prompt_content
from nighthawk.replay import ReplayMissError, ReplayStore, replay_executor
from scripting import Script, finish, scripted_executor

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


@nh.natural_function
def describe(photo: object, note: str) -> None:
    """natural
    Describe <photo> with <note> in mind.
    """


@pytest.fixture(autouse=True)
def _mode_from_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NIGHTHAWK_REPLAY_MODE", raising=False)


def test_masking_leaves_image_bytes_whole_while_the_text_is_masked() -> None:
    # The picture's bytes happen to hold the secret: a scrubber working on text must not rewrite them.
    image = png() + SECRET.encode()
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        describe(image, f"the key is {SECRET}")
    text, label, media = prompt_content(script.seen[0])
    assert SECRET not in text
    assert label == "Attachment 1 (<photo>):"
    assert media == BinaryContent(image, media_type="image/png")


def unreachable(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise AssertionError("replay mode must not ask the wrapped model")


def record(path: Path, image: bytes) -> None:
    executor = replay_executor(path, "record", model=FunctionModel(Script([[finish()]])))
    with nh.run(executor):
        describe(image, "colour")


def test_a_store_keeps_an_image_as_its_hash_not_its_bytes(tmp_path: Path) -> None:
    image = png(size=32)
    record(path := tmp_path / "store.replay.yaml", image)
    text = path.read_text()
    assert base64.b64encode(image).decode() not in text
    (exchange,) = ReplayStore(path).exchanges
    content = exchange.request["messages"][0]["parts"][0]["content"]
    assert content[2] == {
        "kind": "binary",
        "media_type": "image/png",
        "bytes": len(image),
        "sha256": hashlib.sha256(image).hexdigest(),
    }
    assert yaml.safe_load(text)["exchanges"]


def test_replay_matches_an_image_by_its_hash(tmp_path: Path) -> None:
    recorded, other = png(1, 2, 3, size=32), png(3, 2, 1, size=32)
    assert len(recorded) == len(other)  # the placeholder in LOCALS shows the size
    record(path := tmp_path / "store.replay.yaml", recorded)
    # The store knows the picture only by its hash: put the other picture's hash there, and that one matches.
    text = path.read_text().replace(hashlib.sha256(recorded).hexdigest(), hashlib.sha256(other).hexdigest())
    path.write_text(text)
    with nh.run(replay_executor(path, "replay", model=FunctionModel(unreachable))):
        describe(other, "colour")


def test_replay_misses_for_another_image(tmp_path: Path) -> None:
    record(path := tmp_path / "store.replay.yaml", png(255, 0, 0, size=32))
    with nh.run(replay_executor(path, "replay")), pytest.raises(ReplayMissError, match=r"(?s)-\s+sha256: .*\+\s+sha256: "):
        describe(png(0, 0, 255, size=32), "colour")


def test_media_events_round_trip_through_the_type_adapter() -> None:
    event = events.PromptRendered(
        invocation_id="step-1",
        system_prompt="s",
        user_prompt="u",
        media=(events.MediaShown(binding="photo", media_type="image/png", placeholder="<attachment 1>", thumbnail=png()),),
    )
    adapter = events.event_type_adapter()
    assert adapter.validate_json(adapter.dump_json([event])) == [event]
