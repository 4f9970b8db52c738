"""`nh_eval`, `nh_assign` and user tools (spec 8.3): the envelope, validation, atomicity, scoping."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import typing
from dataclasses import dataclass

import pytest

import nighthawk as nh
from nighthawk.answers.tools import ErrorKind
from scripting import call, finish, scripted_executor


def evaluate(expression: str):
    return call("nh_eval", expression=expression)


def assign(target: str, expression: str):
    return call("nh_assign", target_path=target, expression=expression)


def run_block_with(*tool_calls, locals_: dict | None = None):
    """Run one block whose first model response makes `tool_calls`; return the envelopes the model got."""
    executor, script = scripted_executor(list(tool_calls), [finish()])
    values = dict(locals_ or {})

    @nh.natural_function
    def block(values: dict) -> None:
        """natural
        Work with <values>.
        """

    with nh.run(executor):
        block(values)
    return [json.loads(text) if text.startswith('{"value": null') else text for text in script.last_tool_results()], values


def test_eval_returns_value_envelope() -> None:
    (envelope,), _ = run_block_with(evaluate("1 + 2"))
    assert envelope == '{"value": 3, "error": null}'


def test_eval_sees_step_locals_inside_lambdas_comprehensions_and_generators() -> None:
    expression = "(sorted(values, key=lambda k: values[k]), [values[k] for k in values], sum(values[k] for k in values))"
    (envelope,), _ = run_block_with(evaluate(expression), locals_={"b": 1, "a": 2})
    assert envelope == '{"value": [["b","a"],[1,2],3], "error": null}'


def test_eval_walrus_binding_lands_in_step_locals() -> None:
    (first, second), _ = run_block_with(evaluate("(n := len(values))"), evaluate("n * 10"), locals_={"a": 1})
    assert second == '{"value": 10, "error": null}'


def test_eval_awaits_an_awaitable_result() -> None:
    async def later() -> str:
        await asyncio.sleep(0)
        return "done"

    executor, script = scripted_executor([evaluate("later()")], [finish()])

    @nh.natural_function
    def block() -> None:
        """natural
        Await <later>.
        """

    with nh.run(executor):
        block()
    assert script.last_tool_results() == ['{"value": "done", "error": null}']


def test_eval_statement_is_invalid_input_with_guidance() -> None:
    (envelope,), _ = run_block_with(evaluate("x = 1"))
    assert envelope["error"]["kind"] == "invalid_input"
    assert "statements" in envelope["error"]["guidance"]


def test_eval_unknown_name_is_a_resolution_error() -> None:
    (envelope,), _ = run_block_with(evaluate("nope + 1"))
    assert envelope["error"]["kind"] == "resolution"
    assert "nope" in envelope["error"]["message"]


def test_eval_exception_is_an_execution_error() -> None:
    (envelope,), _ = run_block_with(evaluate("1 / 0"))
    assert envelope["error"] == {
        "kind": "execution",
        "message": "ZeroDivisionError: division by zero",
        "guidance": "Fix the expression, or inspect the values involved with nh_eval first.",
    }


def test_eval_timeout_is_a_transient_error() -> None:
    def slow() -> None:
        raise TimeoutError("upstream slow")

    executor, script = scripted_executor([evaluate("slow()")], [finish()])

    @nh.natural_function
    def block() -> None:
        """natural
        Call <slow>.
        """

    with nh.run(executor):
        block()
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "transient"


def test_assigning_a_value_that_does_not_fit_the_binding_type_is_invalid_input() -> None:
    executor, script = scripted_executor([assign("count", "'many'")], [finish()])

    @nh.natural_function
    def tally() -> int:
        count: int = 0
        """natural
        Set <:count>.
        """
        return count

    with nh.run(executor):
        assert tally() == 0
    error = json.loads(script.last_tool_results()[0])["error"]
    assert (error["kind"], error["message"][:35]) == ("invalid_input", "cannot assign 'count': expected int")


def test_tool_error_kinds_are_the_five_of_the_specification() -> None:
    kinds = ("invalid_input", "resolution", "execution", "transient", "internal")
    assert typing.get_args(ErrorKind) == kinds


@pytest.mark.parametrize("target", ["1x", "a..b", "a.", "a-b", "a.b c"])
def test_assign_rejects_malformed_target_paths(target: str) -> None:
    (envelope,), _ = run_block_with(assign(target, "1"))
    assert envelope["error"]["kind"] == "invalid_input"


@pytest.mark.parametrize("target", ["__class__", "values.__dict__", "values.__class__.x"])
def test_assign_refuses_dunder_segments(target: str) -> None:
    (envelope,), _ = run_block_with(assign(target, "1"))
    assert "dunder" in envelope["error"]["message"]


def test_assign_dotted_path_sets_an_attribute_in_place() -> None:
    @dataclass
    class Box:
        size: int = 0

    box = Box()
    executor, script = scripted_executor([assign("box.size", "'3'")], [finish()])

    @nh.natural_function
    def block(box: Box) -> None:
        """natural
        Resize <box>.
        """

    with nh.run(executor):
        block(box)
    assert box.size == 3  # coerced to the declared field type
    assert script.last_tool_results() == ['{"value": 3, "error": null}']


def test_assign_dotted_path_validation_failure_leaves_object_untouched() -> None:
    @dataclass
    class Box:
        size: int = 0

    box = Box(size=1)
    executor, script = scripted_executor([assign("box.size", "'huge'")], [finish()])

    @nh.natural_function
    def block(box: Box) -> None:
        """natural
        Resize <box>.
        """

    with nh.run(executor):
        block(box)
    assert box.size == 1
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "invalid_input"


def test_assign_to_unknown_root_is_a_resolution_error_and_does_not_evaluate() -> None:
    calls: list[str] = []
    executor, script = scripted_executor([assign("ghost.attr", "record()")], [finish()])

    def record() -> int:
        calls.append("ran")
        return 1

    @nh.natural_function
    def block() -> None:
        """natural
        Use <record>.
        """

    with nh.run(executor):
        block()
    assert json.loads(script.last_tool_results()[0])["error"]["kind"] == "resolution"
    assert calls == []


def test_tool_result_value_is_bounded_by_tool_result_max_tokens() -> None:
    limits = nh.StepContextLimits(tool_result_max_tokens=30)
    executor, script = scripted_executor([evaluate("list(range(100000))")], [finish()], context_limits=limits)

    @nh.natural_function
    def block() -> None:
        """natural
        Look at a long list.
        """

    with nh.run(executor):
        block()
    assert len(script.last_tool_results()[0]) < 200


def test_tool_result_masks_credential_values() -> None:
    secret = "sk-proj-" + "A1b2C3d4" * 6
    (envelope,), _ = run_block_with(evaluate(f"'token is {secret}'"))
    assert secret not in envelope
    assert "<masked>" in envelope


# --- user tools -------------------------------------------------------------------------------------


def test_user_tool_is_offered_to_the_model_and_called_with_run_context() -> None:
    seen: list[object] = []
    executor, script = scripted_executor([call("add_points", base=2, bonus=3)], [finish()])

    with nh.run(executor):

        @nh.tool(name="add_points", metadata={"team": "scoring"})
        def add(run_context, *, base: int, bonus: int) -> int:
            """Add a bonus to a base score."""
            seen.append(run_context.deps)
            return base + bonus

        @nh.natural_function
        def block() -> None:
            """natural
            Score it.
            """

        block()
    definition = next(tool for tool in script.infos[0].function_tools if tool.name == "add_points")
    assert set(definition.parameters_json_schema["properties"]) == {"base", "bonus"}
    assert definition.description == "Add a bonus to a base score."
    assert script.last_tool_results() == ['{"value": 5, "error": null}']
    assert isinstance(seen[0], nh.StepContext)


def test_tool_registered_in_a_scope_is_invisible_outside_it() -> None:
    executor, script = scripted_executor([finish()], [finish()])

    @nh.natural_function
    def block() -> None:
        """natural
        Anything.
        """

    with nh.run(executor):
        with nh.scope():

            @nh.tool
            def scoped_helper(run_context) -> str:
                return "x"

            block()
        block()
    assert "scoped_helper" in [t.name for t in script.infos[0].function_tools]
    assert "scoped_helper" not in [t.name for t in script.infos[1].function_tools]


def test_duplicate_tool_name_in_the_same_scope_is_rejected() -> None:
    executor, _ = scripted_executor()
    with nh.run(executor):

        @nh.tool(name="twice")
        def first(run_context) -> None: ...

        with pytest.raises(nh.ToolRegistrationError, match="already registered in this scope; pass `overwrite=True`"):

            @nh.tool(name="twice")
            def second(run_context) -> None: ...

        @nh.tool(name="twice", overwrite=True)
        def third(run_context) -> None: ...


@pytest.mark.parametrize("name", ["bad-name", "1st", "ünïcode", "nh_eval"])
def test_invalid_tool_names_are_rejected(name: str) -> None:
    with nh.run(scripted_executor()[0]), pytest.raises(nh.ToolRegistrationError, match=repr(name).replace("\\", "\\\\")):
        nh.tool(name=name)(lambda run_context: None)


def test_user_tool_exception_becomes_an_error_envelope() -> None:
    executor, script = scripted_executor([call("explode")], [finish()])
    with nh.run(executor):

        @nh.tool
        def explode(run_context) -> None:
            raise RuntimeError("kaboom")

        @nh.natural_function
        def block() -> None:
            """natural
            Try it.
            """

        block()
    assert json.loads(script.last_tool_results()[0])["error"]["message"] == "RuntimeError: kaboom"


def test_tool_whose_first_parameter_is_a_model_argument_is_refused_when_declared() -> None:
    message = (
        r"tool 'lookup': its first parameter `city` is annotated `str`, but the first parameter receives the run "
        r"context, not an argument from the model\. Add a first parameter for it, as in `def lookup\(run_context, \.\.\.\)`"
    )
    with nh.run(scripted_executor()[0]), pytest.raises(nh.ToolRegistrationError, match=message):

        @nh.tool
        def lookup(city: str) -> str:
            return city


def test_tool_without_parameters_is_refused_when_declared() -> None:
    with nh.run(scripted_executor()[0]), pytest.raises(
        nh.ToolRegistrationError, match=r"tool 'today' takes no positional parameter to receive the run context"
    ):

        @nh.tool
        def today() -> str:
            return "Monday"


def test_tool_with_a_parameter_pydantic_cannot_validate_is_refused_when_declared() -> None:
    message = (
        r"tool 'query': pydantic-ai cannot build a schema for its parameters \(Unable to generate pydantic-core "
        r"schema for <class 'sqlite3.Connection'>\)\. Give each parameter after the first a type pydantic can validate"
    )
    with nh.run(scripted_executor()[0]), pytest.raises(nh.ToolRegistrationError, match=message):

        @nh.tool
        def query(run_context, connection: sqlite3.Connection) -> int:
            return 0


def test_steps_still_run_after_a_bad_tool_was_refused() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def block() -> None:
        """natural
        Anything.
        """

    with nh.run(executor):
        with pytest.raises(nh.ToolRegistrationError):

            @nh.tool
            def lookup(city: str) -> str:
                return city

        block()
    assert script.requests == 1


FORWARD_REFERENCE_MODULE = '''
from __future__ import annotations

import pydantic

import nighthawk as nh


@nh.tool
def search(run_context, query: Query) -> str:
    """Search the catalogue."""
    return "found " + query.text


class Query(pydantic.BaseModel):
    text: str


@nh.natural_function
def look_up() -> None:
    """natural
    Search for anything.
    """
'''


def test_tool_naming_a_type_defined_later_in_its_module_works(tmp_path, monkeypatch) -> None:
    (tmp_path / "catalogue_tools.py").write_text(FORWARD_REFERENCE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    executor, script = scripted_executor([call("search", query={"text": "lamp"})], [finish()])
    with nh.run(executor):
        __import__("catalogue_tools").look_up()
    assert script.last_tool_results() == ['{"value": "found lamp", "error": null}']


def test_partial_registered_as_a_tool_is_refused_with_the_fix() -> None:
    import functools

    def scaled(run_context, value: int, scale: int) -> int:
        return value * scale

    with nh.run(scripted_executor()[0]), pytest.raises(
        nh.ToolRegistrationError, match=r"tool 'triple': pydantic-ai cannot read it as a tool .* Register a plain function"
    ):
        nh.tool(name="triple")(functools.partial(scaled, scale=3))
