"""Who shows a map's progress: the stderr line by default, or a renderer a front end registered
(`nighthawk.batch.progress.use_renderer`; the kernel extension registers one, the core knows nothing of it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.batch.progress import use_renderer
from nighthawk.batch.store import session_store


def returning(expression: str) -> nh.AgentStepExecutor:
    """A scripted model whose every step returns `expression`."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": expression})])

    model = FunctionModel(answer, model_name="scripted")
    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))


def fail_at(key: int, bad: set[int]) -> int:
    if key in bad:
        raise ValueError(f"no answer for {key}")
    return key


@nh.natural_function
def add(a: int, b: int) -> int:
    """natural
    Return <a> plus <b>.
    """


class Recorder:
    """A renderer that writes down what the map told it."""

    def __init__(self, total: int | None, progress: bool | None) -> None:
        self.total = total
        self.progress = progress
        self.calls: list[str] = []

    def kept_item(self) -> None:
        self.calls.append("kept")

    def finished_item(self) -> None:
        self.calls.append("finished")

    def failed_item(self, index: int, error: BaseException) -> None:
        self.calls.append(f"failed {index} {type(error).__name__}")

    def shared_item(self, *, failed: bool) -> None:
        self.calls.append("shared failure" if failed else "shared")

    def stopped(self, reason: str) -> None:
        self.calls.append(f"stopped: {reason}")

    def close(self) -> None:
        self.calls.append("close")


@pytest.fixture(autouse=True)
def clean() -> Iterator[list[Recorder]]:
    session_store().clear()
    made: list[Recorder] = []
    previous = use_renderer(lambda total, usage, progress: made.append(Recorder(total, progress)) or made[-1])
    yield made
    use_renderer(previous)
    session_store().clear()


def test_a_registered_renderer_is_told_of_every_item_and_closed_once(clean: list[Recorder]) -> None:
    with nh.run(returning("fail_at(a, {2}) + b")):
        nh.map(add, range(5), range(5), on_error="collect")
    (shown,) = clean
    assert shown.total == 5
    assert sorted(shown.calls[:-1]) == ["failed 2 ExecutionError"] + ["finished"] * 4
    assert shown.calls[-1] == "close"


def test_items_kept_from_an_earlier_map_are_reported_as_kept(clean: list[Recorder]) -> None:
    with nh.run(returning("a + b")):
        nh.map(add, range(3), range(3))
        nh.map(add, range(3), range(3))
    assert clean[1].calls == ["kept", "kept", "kept", "close"]


def test_the_renderer_is_asked_with_progress_false_too(clean: list[Recorder]) -> None:
    with nh.run(returning("a + b")):
        nh.map(add, range(2), range(2), progress=False)
    assert [shown.progress for shown in clean] == [False]


def test_a_factory_returning_none_leaves_the_map_to_the_stderr_line(capsys: pytest.CaptureFixture[str]) -> None:
    use_renderer(lambda total, usage, progress: None)
    with nh.run(returning("a + b")):
        nh.map(add, range(3), range(3), progress=True)
    assert capsys.readouterr().err.rstrip("\n").split("\r")[-1].startswith("nighthawk.map 3/3 | 0 failed | ")


def test_a_renderer_is_told_of_items_answered_by_an_equal_item(clean: list[Recorder]) -> None:
    with nh.run(returning("a + b")):
        nh.map(add, [1, 1, 2], [1, 1, 2])
    (shown,) = clean
    assert sorted(shown.calls[:-1]) == ["finished", "finished", "shared"]


def test_a_renderer_is_told_where_and_why_the_map_stopped_before_it_closes(clean: list[Recorder]) -> None:
    with nh.run(returning("fail_at(a, {1}) + b")), pytest.raises(nh.MapItemError):
        nh.map(add, range(3), range(3), concurrency=1)
    (shown,) = clean
    assert shown.calls[-2].startswith("stopped: stopped at item 1: ExecutionError:")
    assert shown.calls[-3] == "failed 1 ExecutionError"
    assert shown.calls[-1] == "close"
