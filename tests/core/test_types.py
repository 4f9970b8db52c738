"""The type matrix for natural functions: every type a user annotates works for write bindings and returns.

Each case (tests/type_cases.py) x (a value of the type, a value pydantic converts, a wrong value then a
corrected retry, a `return` of the type), asserting the committed value's exact type and content.

No `from __future__ import annotations` here: the factories annotate with a variable, which only a real
(evaluated) annotation captures. Forward references have their own tests (test_forward_references.py).
"""

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor
from type_cases import CASES, COERCIBLE, NAMESPACE, TypeCase, same

# The model's expressions run in this module's globals, like a user's module that defines its types.
from type_cases import Color, Ledger, Movie, Pair, Point, Report, Scores, Span, pd  # noqa: F401, E402


def assign(target: str, expression: str) -> Any:
    return call("nh_assign", target_path=target, expression=expression)


def writer(annotation: object) -> Callable[[object], object]:
    """A natural function whose write binding `result` is a parameter annotated with `annotation`."""

    @nh.natural_function
    def write(result: annotation) -> object:  # type: ignore[valid-type]
        """natural
        Set <:result>.
        """
        return result

    return write


def returner(annotation: object) -> Callable[[], object]:
    """A natural function annotated `-> annotation` whose block returns a value."""

    @nh.natural_function
    def give() -> annotation:  # type: ignore[valid-type]
        """natural
        Return the value.
        """

    return give


def expected(case: TypeCase) -> object:
    return eval(case.expected, dict(NAMESPACE))  # noqa: S307 - the case's own expression


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_value_of_the_declared_type_is_committed_as_is(case: TypeCase) -> None:
    executor, _ = scripted_executor([assign("result", case.valid), finish()])
    with nh.run(executor):
        committed = writer(case.annotation)(None)
    assert same(committed, expected(case))
    assert type(committed) is case.committed_type


@pytest.mark.parametrize("case", COERCIBLE, ids=lambda case: case.id)
def test_convertible_value_is_committed_as_the_declared_type(case: TypeCase) -> None:
    executor, script = scripted_executor([assign("result", case.coercible), finish()])
    with nh.run(executor):
        committed = writer(case.annotation)(None)
    assert type(committed) is case.committed_type
    assert same(committed, expected(case))
    assert script.requests == 1


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_wrong_value_gets_a_validation_error_and_the_retry_is_committed(case: TypeCase) -> None:
    executor, script = scripted_executor([assign("result", case.invalid)], [assign("result", case.valid), finish()])
    with nh.run(executor):
        committed = writer(case.annotation)(None)
    error = json.loads(script.last_tool_results()[0])["error"]
    assert error["kind"] == "invalid_input"
    assert error["message"].startswith("cannot assign 'result': expected ")
    assert case.label in error["message"]
    assert same(committed, expected(case))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_return_value_is_validated_against_the_return_annotation(case: TypeCase) -> None:
    executor, _ = scripted_executor([finish("return", return_expression=case.coercible or case.valid)])
    with nh.run(executor):
        returned = returner(case.annotation)()
    assert type(returned) is case.committed_type
    assert same(returned, expected(case))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_wrong_return_value_is_sent_back_naming_the_type(case: TypeCase) -> None:
    executor, script = scripted_executor(
        [finish("return", return_expression=case.invalid)], [finish("return", return_expression=case.valid)]
    )
    with nh.run(executor):
        returned = returner(case.annotation)()
    assert same(returned, expected(case))
    retry = str(script.seen[-1][-1].parts[0].content)
    assert "does not match the return annotation: expected" in retry
    assert case.label in retry


def holder_of(annotation: object) -> type:
    """A user's dataclass with a field of the case's type, for `nh_assign("box.value", ...)`."""
    return dataclasses.make_dataclass("Box", [("value", annotation, dataclasses.field(default=None))])


@nh.natural_function
def fill_attribute(box: object) -> None:
    """natural
    Fill the value of <box>.
    """


@pytest.mark.parametrize("case", COERCIBLE, ids=lambda case: case.id)
def test_attribute_target_is_set_as_the_declared_field_type(case: TypeCase) -> None:
    box = holder_of(case.annotation)()
    executor, _ = scripted_executor([assign("box.value", case.coercible), finish()])
    with nh.run(executor):
        fill_attribute(box)
    assert type(box.value) is case.committed_type
    assert same(box.value, expected(case))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_wrong_value_for_an_attribute_target_is_refused_naming_the_type(case: TypeCase) -> None:
    box = holder_of(case.annotation)()
    executor, script = scripted_executor([assign("box.value", case.invalid)], [assign("box.value", case.valid), finish()])
    with nh.run(executor):
        fill_attribute(box)
    error = json.loads(script.last_tool_results()[0])["error"]
    assert error["kind"] == "invalid_input"
    assert case.label in error["message"]
    assert same(box.value, expected(case))
