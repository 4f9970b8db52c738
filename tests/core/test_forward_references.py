"""Postponed annotations (`from __future__ import annotations`): every annotation here is a string."""

from __future__ import annotations

import dataclasses
import json

import pydantic
import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor


def assign(target: str, expression: str) -> object:
    return call("nh_assign", target_path=target, expression=expression)


@nh.natural_function
def summarise(report: Report) -> Summary:
    """natural
    Fill <:report> and return a summary of it.
    """


@dataclasses.dataclass
class Summary:
    headline: str
    report: Report  # defined below: resolved when first validated


class Report(pydantic.BaseModel):
    title: str
    tags: list[Tag]


class Tag(pydantic.BaseModel):
    name: str


def test_parameter_annotation_naming_a_later_class_types_the_binding() -> None:
    executor, _ = scripted_executor(
        [assign("report", "{'title': 'q3', 'tags': [{'name': 'sales'}]}"), finish("return", return_expression="report")]
    )

    @nh.natural_function
    def fill(report: Report) -> Report:
        """natural
        Fill <:report>.
        """
        return report

    with nh.run(executor):
        report = fill(None)
    assert report == Report(title="q3", tags=[Tag(name="sales")])


def test_return_annotation_naming_a_dataclass_with_forward_fields_coerces_the_value() -> None:
    executor, _ = scripted_executor(
        [finish("return", return_expression="{'headline': 'up', 'report': {'title': 'q3', 'tags': []}}")]
    )
    with nh.run(executor):
        summary = summarise(None)
    assert summary == Summary(headline="up", report=Report(title="q3", tags=[]))


def test_annotated_local_naming_a_class_of_the_enclosing_function_types_the_binding() -> None:
    class Note(pydantic.BaseModel):
        text: str

    executor, script = scripted_executor([assign("note", "{'text': 5}")], [assign("note", "{'text': 'hi'}"), finish()])

    @nh.natural_function
    def write() -> Note:
        note: Note = Note(text="")
        """natural
        Fill <:note>.
        """
        return note

    with nh.run(executor):
        note = write()
    assert note == Note(text="hi")
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "invalid_input"


def test_model_whose_forward_reference_never_resolves_is_an_internal_error() -> None:
    class Broken(pydantic.BaseModel):
        part: Missing  # noqa: F821 - deliberately undefined

    executor, script = scripted_executor([assign("broken", "{'part': 1}")], [finish()])

    @nh.natural_function
    def write(broken: Broken) -> None:
        """natural
        Fill <:broken>.
        """

    with nh.run(executor):
        write(None)
    error = json.loads(script.last_tool_results()[0])["error"]
    assert error["kind"] == "internal"
    assert "Broken" in error["message"]


def test_return_that_cannot_be_validated_fails_the_block_as_an_internal_error() -> None:
    class Broken(pydantic.BaseModel):
        part: Missing  # noqa: F821 - deliberately undefined

    executor, _ = scripted_executor([finish("return", return_expression="{'part': 1}")])

    @nh.natural_function
    def give() -> Broken:
        """natural
        Return it.
        """

    with nh.run(executor), pytest.raises(nh.NighthawkError, match="cannot validate against Broken") as caught:
        give()
    assert not isinstance(caught.value, nh.ExecutionError)
