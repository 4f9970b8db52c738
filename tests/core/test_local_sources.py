"""Where a natural function's locals can be taken from in the notebook (core/nighthawk/transcript/_local_sources.py),
for the code of its step (`%nighthawk code`)."""

from __future__ import annotations

import sys

import pytest

import nighthawk as nh
from nighthawk import events
from nighthawk.transcript._local_sources import local_sources
from scripting import finish, scripted_executor


def only(python_locals: dict[str, object], notebook: dict[str, object]) -> events.LocalSource:
    (source,) = local_sources(python_locals, ("xs",), notebook)
    return source


def test_a_value_a_notebook_name_holds_is_that_name() -> None:
    scores = [7, 3, 9]
    assert only({"xs": scores}, {"data": [7, 3, 9], "scores": scores}) == events.LocalSource(
        name="xs", parameter=True, source="name", expression="scores"
    )


def test_ipythons_output_history_is_never_the_name_chosen() -> None:
    scores = [7, 3, 9]
    assert only({"xs": scores}, {"_": scores, "_3": scores, "scores": scores}).expression == "scores"


def test_a_small_number_is_its_literal_even_when_a_notebook_name_holds_it() -> None:
    # Python shares small ints between all names: `limit` holding 2 says nothing about where the 2 came from.
    assert only({"xs": 2}, {"limit": 2}) == events.LocalSource(name="xs", parameter=True, source="literal", expression="2")


def test_a_short_list_nothing_names_is_its_literal() -> None:
    assert only({"xs": [120, 80.5, "a", None]}, {}).expression == "[120, 80.5, 'a', None]"


@pytest.mark.parametrize("value", [list(range(100)), "x" * 200, float("nan"), [[[1]]]], ids=["long list", "long str", "nan", "deep"])
def test_a_value_no_short_literal_gives_back_is_named_by_its_type(value: object) -> None:
    assert only({"xs": value}, {}) == events.LocalSource(
        name="xs", parameter=True, source="unnamed", type_name=type(value).__name__
    )


def test_an_object_of_the_users_own_class_is_never_turned_into_text() -> None:
    class Loud(list):  # a subclass: its repr is user code, which must not run here
        def __repr__(self) -> str:
            raise AssertionError("repr called")

    assert only({"xs": Loud([1])}, {}).source == "unnamed"


@nh.natural_function
def padded(xs: list[int], *rest: int, width: int = 3, **options: str) -> list[int]:
    fill = 0
    """natural
    Pad <xs> with <fill> to <width>.
    """


def started_by(function: object, *args: object, **kwargs: object) -> events.StepStarted:
    """The `StepStarted` event of calling `function` once, with a model that returns `xs`."""
    executor, _ = scripted_executor([finish("return", return_expression="xs")])
    seen: list[object] = []
    with events.listen(seen.append), nh.run(executor):
        function(*args, **kwargs)  # type: ignore[operator]
    (started,) = [event for event in seen if isinstance(event, events.StepStarted)]
    return started


def test_the_functions_parameters_are_told_from_the_variables_it_set_before_the_block() -> None:
    started = started_by(padded, [1], 2, width=4, sep=",")
    assert [(source.name, source.parameter) for source in started.local_sources] == [
        ("xs", True),
        ("width", True),
        ("rest", True),
        ("options", True),
        ("fill", False),
    ]


@nh.natural_function
def smallest(xs: list[int], key: str) -> list[int]:
    """natural
    Sort <xs> and return it; <key> says how.
    """


def test_a_natural_functions_step_started_event_says_where_its_arguments_come_from(monkeypatch: pytest.MonkeyPatch) -> None:
    scores = [7, 3, 9]
    monkeypatch.setattr(sys.modules["__main__"], "scores", scores, raising=False)
    started = started_by(smallest, scores, "ascending")
    assert [(source.name, source.expression) for source in started.local_sources] == [
        ("xs", "scores"),
        ("key", "'ascending'"),
    ]


@nh.natural_function
def signed(xs: str, api_key: str) -> str:
    """natural
    Return <xs> signed with <api_key>.
    """


def test_a_secret_argument_written_as_a_literal_reaches_no_listener() -> None:
    secret = "sk-proj-Q7vR2mZ9pL4tK8wN3bY6cJ1hF5dS0aGx"
    started = started_by(signed, "hello", secret)
    assert secret not in repr(started)
    assert dict((source.name, source.expression) for source in started.local_sources)["api_key"] == "'<masked>'"


def test_no_listener_no_sources_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    import nighthawk._listeners
    import nighthawk.transcript._local_sources as module

    monkeypatch.setattr(nighthawk._listeners, "_process_listeners", [])  # a kernel's display, in a shared run

    def refuse(*args: object, **kwargs: object) -> tuple[events.LocalSource, ...]:
        raise AssertionError("made without a listener")

    monkeypatch.setattr(module, "local_sources", refuse)
    executor, _ = scripted_executor([finish("return", return_expression="xs")])
    with nh.run(executor):
        assert signed("hello", "key") == "hello"
