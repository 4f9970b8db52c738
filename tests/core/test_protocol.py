"""The protocol a model is offered: which tools, with which schemas, and what stays the same between steps.

These tests pin structure, not wording: tool names, parameter names, enums and required keys.
"""

from __future__ import annotations

import json

import nighthawk as nh
from scripting import finish, scripted_executor


def first_request(function, *args):
    """The `AgentInfo` and messages of the first model request `function(*args)` makes."""
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        function(*args)
    return script.infos[0], script.seen[0]


def tool_definitions(info) -> list[dict[str, object]]:
    return [
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters_json_schema}
        for tool in [*info.function_tools, *info.output_tools]
    ]


@nh.natural_function
def flat_block(x: int) -> int:
    y = 0
    """natural
    Store <x> plus one in <:y>.
    """
    return y


@nh.natural_function
def loop_block(items: list[int]) -> list[int]:
    kept: list[int] = []
    for item in items:
        """natural
        Skip <item> if it is odd, otherwise append it to <kept>.
        """
    return kept


def test_a_step_is_offered_two_function_tools_and_one_outcome_tool():
    info, _ = first_request(flat_block, 1)
    assert [tool.name for tool in info.function_tools] == ["nh_eval", "nh_assign"]
    assert [tool.name for tool in info.output_tools] == ["nh_outcome"]


def test_function_tool_parameters_are_the_expressions_and_the_target():
    info, _ = first_request(flat_block, 1)
    schemas = {tool.name: tool.parameters_json_schema for tool in info.function_tools}
    assert schemas["nh_eval"]["required"] == ["expression"]
    assert schemas["nh_assign"]["required"] == ["target_path", "expression"]
    assert all(schema["additionalProperties"] is False for schema in schemas.values())


def _branches(schema: dict) -> dict[str, dict]:
    """The union under `outcome`, by the kinds each branch takes."""
    union = schema["properties"]["outcome"]
    branches = union.get("anyOf", [union])
    return {" ".join(branch["properties"]["kind"]["enum"]): branch for branch in branches}


def test_outcome_schema_outside_a_loop_offers_pass_return_and_raise():
    info, _ = first_request(flat_block, 1)
    schema = info.output_tools[0].parameters_json_schema
    assert schema["required"] == ["outcome"]
    assert schema["additionalProperties"] is False
    branches = _branches(schema)
    assert list(branches) == ["pass", "return", "raise"]
    assert set(branches["return"]["properties"]) == {"kind", "return_expression"}
    assert set(branches["raise"]["properties"]) == {"kind", "raise_message", "raise_error_type"}
    assert "ValueError" in branches["raise"]["properties"]["raise_error_type"]["anyOf"][0]["enum"]


def test_outcome_schema_inside_a_loop_adds_break_and_continue():
    info, _ = first_request(loop_block, [2])
    assert list(_branches(info.output_tools[0].parameters_json_schema)) == ["pass break continue", "return", "raise"]


def test_outcome_schema_leaves_out_the_keys_of_denied_kinds():
    @nh.natural_function
    def pass_only() -> None:
        """natural
        ---
        deny: [return, raise]
        ---
        Do nothing.
        """

    info, _ = first_request(pass_only)
    assert info.output_tools[0].parameters_json_schema["properties"]["outcome"]["properties"] == {
        "kind": {"type": "string", "enum": ["pass"]}
    }


def test_system_prompt_and_tools_are_identical_across_steps_of_the_same_kind():
    @nh.natural_function
    def other_block(name: str, count: int) -> str:
        greeting = ""
        """natural
        Greet <name> <count> times and store the text in <:greeting>.
        """
        return greeting

    first_info, first_messages = first_request(flat_block, 1)
    second_info, second_messages = first_request(other_block, "Ada", 2)
    assert first_messages[0].instructions == second_messages[0].instructions
    assert json.dumps(tool_definitions(first_info)) == json.dumps(tool_definitions(second_info))


def test_system_prompt_is_the_same_inside_and_outside_a_loop():
    _, flat_messages = first_request(flat_block, 1)
    _, loop_messages = first_request(loop_block, [2])
    assert flat_messages[0].instructions == loop_messages[0].instructions


def test_outcome_with_keys_of_another_kind_is_refused_and_corrected():
    executor, script = scripted_executor(
        [finish("pass", return_expression="1")], [finish("return", return_expression="x + 1")]
    )
    with nh.run(executor):
        assert flat_block(4) == 5
    correction = str(script.seen[1][-1].parts[0].content)
    assert "return_expression" in correction
