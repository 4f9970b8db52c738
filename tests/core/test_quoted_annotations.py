"""Quoted annotations written by hand (no `from __future__ import annotations`): a name in quotes, alone or
inside a generic, types a binding as the class it names."""

import json
from typing import Annotated, Optional

import annotated_types
import pydantic

import nighthawk as nh
from scripting import call, finish, scripted_executor


class Cat(pydantic.BaseModel):
    name: str


def assign(target: str, expression: str) -> object:
    return call("nh_assign", target_path=target, expression=expression)


def test_quoted_local_annotation_types_the_binding() -> None:
    executor, _ = scripted_executor([assign("cat", "{'name': 'Tom'}"), finish()])

    @nh.natural_function
    def adopt() -> "Cat":
        cat: "Cat"
        """natural
        Fill <:cat>.
        """
        return cat

    with nh.run(executor):
        assert adopt() == Cat(name="Tom")


def test_quoted_name_inside_optional_types_the_binding() -> None:
    executor, _ = scripted_executor([assign("cat", "{'name': 'Tom'}"), finish()])

    @nh.natural_function
    def adopt():
        cat: Optional["Cat"] = None  # noqa: UP045 - the form users write
        """natural
        Fill <:cat>.
        """
        return cat

    with nh.run(executor):
        assert adopt() == Cat(name="Tom")


def test_quoted_name_inside_a_parameter_generic_types_the_binding() -> None:
    executor, _ = scripted_executor([assign("cats", "[{'name': 'Tom'}]"), finish()])

    @nh.natural_function
    def adopt(cats: list["Cat"]) -> list["Cat"]:
        """natural
        Fill <:cats>.
        """
        return cats

    with nh.run(executor):
        assert adopt([]) == [Cat(name="Tom")]


def test_constraints_of_an_annotated_parameter_are_enforced() -> None:
    executor, script = scripted_executor([assign("count", "-1")], [assign("count", "3"), finish()])

    @nh.natural_function
    def count_up(count: Annotated[int, annotated_types.Gt(0)]) -> int:
        """natural
        Set <:count>.
        """
        return count

    with nh.run(executor):
        assert count_up(1) == 3
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "invalid_input"
