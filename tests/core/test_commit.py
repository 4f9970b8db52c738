"""State layers and the commit (spec 8.1): only write bindings reach Python, and only on success."""

from __future__ import annotations

import json

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor


def assign(target: str, expression: str):
    return call("nh_assign", target_path=target, expression=expression)


def test_only_write_bindings_are_committed() -> None:
    executor, _ = scripted_executor([assign("kept", "1"), assign("scratch", "2"), finish()])

    @nh.natural_function
    def work() -> tuple[int, int]:
        kept, scratch = 0, 0
        """natural
        Set <:kept>.
        """
        return kept, scratch

    with nh.run(executor):
        assert work() == (1, 0)


def test_write_binding_that_the_model_never_sets_keeps_its_value() -> None:
    executor, _ = scripted_executor([finish()])

    @nh.natural_function
    def work() -> int:
        value = 5
        """natural
        Maybe set <:value>.
        """
        return value

    with nh.run(executor):
        assert work() == 5


def test_write_binding_is_not_committed_when_the_step_fails() -> None:
    bad = "no outcome, just prose"
    executor, _ = scripted_executor([assign("value", "99")], bad, bad, bad)

    @nh.natural_function
    def work(box: dict[str, int]) -> None:
        value = 1
        try:
            """natural
            Set <:value>.
            """
        finally:
            box["value"] = value

    box: dict[str, int] = {}
    with nh.run(executor), pytest.raises(nh.ExecutionError):
        work(box)
    assert box == {"value": 1}


def test_write_binding_is_not_committed_when_the_block_raises() -> None:
    executor, _ = scripted_executor([assign("value", "2"), finish("raise", raise_message="no", raise_error_type="KeyError")])

    @nh.natural_function
    def work(box: dict[str, int]) -> None:
        value = 1
        try:
            """natural
            Set <:value> or fail.
            """
        finally:
            box["value"] = value

    box: dict[str, int] = {}
    with nh.run(executor), pytest.raises(KeyError):
        work(box)
    assert box == {"value": 1}


def test_write_bindings_are_committed_together() -> None:
    executor, _ = scripted_executor([assign("a", "1"), assign("b", "2"), finish()])

    @nh.natural_function
    def work() -> tuple[int, int]:
        a = b = 0
        """natural
        Set <:a> and <:b>.
        """
        return a, b

    with nh.run(executor):
        assert work() == (1, 2)


def test_in_place_mutation_of_a_read_binding_is_visible_afterwards() -> None:
    executor, _ = scripted_executor([call("nh_eval", expression="log.append('step')"), finish()])

    @nh.natural_function
    def work(log: list[str]) -> None:
        """natural
        Append to <log>.
        """

    log: list[str] = []
    with nh.run(executor):
        work(log)
    assert log == ["step"]


def test_step_locals_include_caller_locals_that_are_not_bound() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def work() -> None:
        helper_value = [1, 2, 3]  # noqa: F841
        """natural
        Nothing bound.
        """

    with nh.run(executor):
        work()
    assert "helper_value: list = [1,2,3]" in str(script.seen[0][0].parts[-1].content)


def test_unannotated_write_binding_takes_the_type_of_its_initial_value() -> None:
    executor, script = scripted_executor([assign("label", "42"), finish()], [assign("label", "'ok'"), finish()])

    @nh.natural_function
    def work() -> str:
        label = ""
        """natural
        Set <:label>.
        """
        return label

    with nh.run(executor):
        assert work() == "ok"
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "invalid_input"


def test_annotated_write_binding_coerces_the_assigned_value() -> None:
    executor, _ = scripted_executor([assign("count", "'12'"), finish()])

    @nh.natural_function
    def work() -> int:
        count: int = 0
        """natural
        Set <:count>.
        """
        return count

    with nh.run(executor):
        assert work() == 12


def test_none_initial_value_leaves_the_binding_type_open() -> None:
    executor, _ = scripted_executor([assign("anything", "[1, 'two']"), finish()])

    @nh.natural_function
    def work() -> object:
        anything = None
        """natural
        Set <:anything>.
        """
        return anything

    with nh.run(executor):
        assert work() == [1, "two"]


def test_parameter_annotation_types_a_write_binding() -> None:
    executor, script = scripted_executor([assign("limit", "'many'"), finish()], [finish()])

    @nh.natural_function
    def work(limit: int) -> int:
        """natural
        Set <:limit>.
        """
        return limit

    with nh.run(executor):
        assert work(3) == 3
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "invalid_input"
