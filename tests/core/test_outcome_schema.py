"""The `nh_outcome` schema admits exactly what the outcome check accepts, in a form every provider takes.

Each provider's rules below are the documented subset of JSON Schema it accepts for tool parameters:
OpenAI strict function calling (a plain object at the root, no union there; every object closed with
`additionalProperties: false` and listing every property in `required`; optional means nullable), Anthropic
tool input schemas and strict tool use (root `type: object`; `additionalProperties` false; at most 16
parameters with `anyOf` or type arrays; no `minLength`/`pattern`-style constraints needed), Gemini
`parametersJsonSchema` (the schema must describe an object whose properties are the parameters) and
llama.cpp's JSON-schema-to-grammar conversion (object, string, null, enum, anyOf, required,
additionalProperties). pydantic-ai's OpenAI strict transformer is a second judge.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import jsonschema
import pytest
from pydantic_ai.profiles.google import GoogleJsonSchemaTransformer
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

import nighthawk as nh
from nighthawk.answers.outcome import outcome_schema, parse_outcome
from nighthawk.configuration import StepExecutorConfiguration
from nighthawk.program.block import parse_program
from nighthawk.program.frame import Frame
from nighthawk.road.runtime import current_execution_context
from nighthawk.step._context import build_step
from scripting import call, scripted_executor

ALL_KINDS = ("pass", "return", "break", "continue", "raise")
RAISE_TYPES = ("ValueError", "KeyError")

# Keywords each provider documents for tool parameters (the part of its subset this schema could use).
OPENAI_STRICT = {"type", "properties", "required", "additionalProperties", "enum", "anyOf", "description", "items"}
ANTHROPIC = {"type", "properties", "required", "additionalProperties", "enum", "const", "anyOf", "description", "items"}
GEMINI = {"type", "properties", "required", "additionalProperties", "enum", "anyOf", "description", "items"}
LLAMA_CPP = {"type", "properties", "required", "additionalProperties", "enum", "const", "anyOf", "oneOf", "items"}

SCHEMAS = {
    "every kind": outcome_schema(ALL_KINDS, RAISE_TYPES),
    "outside a loop": outcome_schema(("pass", "return", "raise"), RAISE_TYPES),
    "pass only": outcome_schema(("pass",), ()),
    "raise without offered types": outcome_schema(("pass", "raise"), ()),
}


def subschemas(schema: object) -> Iterator[dict]:
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key == "properties":
                for item in value.values():
                    yield from subschemas(item)
            elif key in ("anyOf", "items"):
                for item in value if isinstance(value, list) else [value]:
                    yield from subschemas(item)


@pytest.fixture(params=list(SCHEMAS), ids=list(SCHEMAS))
def schema(request: pytest.FixtureRequest) -> dict:
    return SCHEMAS[request.param]


# --- schema = check ------------------------------------------------------------------------------------------

ARGUMENTS = [
    {"outcome": {"kind": "pass"}},
    {"outcome": {"kind": "pass", "return_expression": "total"}},  # the example
    {"outcome": {"kind": "break"}},
    {"outcome": {"kind": "continue", "raise_message": "x"}},
    {"outcome": {"kind": "return", "return_expression": "total"}},
    {"outcome": {"kind": "return"}},
    {"outcome": {"kind": "return", "return_expression": "x", "raise_message": "y"}},
    {"outcome": {"kind": "raise", "raise_message": "no", "raise_error_type": "ValueError"}},
    {"outcome": {"kind": "raise", "raise_message": "no", "raise_error_type": None}},
    {"outcome": {"kind": "raise", "raise_message": "no", "raise_error_type": "SystemExit"}},
    {"outcome": {"kind": "raise", "raise_error_type": "ValueError"}},
    {"outcome": {"kind": "explode"}},
    {"outcome": {"kind": "pass"}, "note": "extra"},
    {"outcome": "pass"},
    {},
]


def check_accepts(arguments: dict, allowed: tuple[str, ...]) -> bool:
    frame = Frame(
        python_locals={},
        python_globals={},
        read_values={},
        in_loop=False,
        binding_types={},
        return_type=object,
        is_async=False,
        step_id="test:1",
    )
    step = build_step(
        parse_program("Do it."), frame, execution_context=current_execution_context(), configuration=StepExecutorConfiguration()
    )
    step.allowed_outcomes = allowed
    step.raise_types = {"ValueError": ValueError, "KeyError": KeyError}
    try:
        parse_outcome(arguments, step)
    except nh.ExecutionError:
        return False
    return True


@pytest.mark.parametrize("arguments", ARGUMENTS, ids=[str(item) for item in ARGUMENTS])
@pytest.mark.parametrize("allowed", [ALL_KINDS, ("pass", "return", "raise")], ids=["in a loop", "outside a loop"])
def test_the_schema_admits_exactly_what_the_check_accepts(arguments: dict, allowed: tuple[str, ...]) -> None:
    admitted = jsonschema.Draft202012Validator(outcome_schema(allowed, RAISE_TYPES)).is_valid(arguments)
    assert admitted == check_accepts(arguments, allowed)


def test_a_pass_carrying_a_return_expression_is_refused_by_the_schema() -> None:
    schema = outcome_schema(("pass", "return", "raise"), RAISE_TYPES)
    assert not jsonschema.Draft202012Validator(schema).is_valid({"outcome": {"kind": "pass", "return_expression": "total"}})


def test_a_model_answering_with_the_schema_form_ends_the_step() -> None:
    @nh.natural_function
    def total_of(prices: list[int]) -> int:
        """natural
        Return the sum of <prices>.
        """

    executor, _ = scripted_executor([call("nh_outcome", outcome={"kind": "return", "return_expression": "sum(prices)"})])
    with nh.run(executor):
        assert total_of([2, 3]) == 5


def test_a_model_answering_a_raise_with_a_null_error_type_raises_the_default() -> None:
    @nh.natural_function
    def refuse() -> None:
        """natural
        Refuse.
        """

    answer = {"kind": "raise", "raise_message": "cannot", "raise_error_type": None}
    executor, _ = scripted_executor([call("nh_outcome", outcome=answer)])
    with nh.run(executor), pytest.raises(Exception, match="cannot"):
        refuse()


# --- each provider's subset ----------------------------------------------------------------------------------


def test_the_root_is_an_object_with_no_union_openai_anthropic_gemini(schema: dict) -> None:
    assert schema["type"] == "object"
    assert not {"anyOf", "oneOf", "allOf", "enum", "$ref"} & set(schema)


def test_every_object_is_closed_and_requires_all_its_properties_openai_strict_anthropic(schema: dict) -> None:
    objects = [item for item in subschemas(schema) if item.get("type") == "object"]
    assert objects
    for item in objects:
        assert item["additionalProperties"] is False
        assert sorted(item["required"]) == sorted(item["properties"])


@pytest.mark.parametrize(
    ("provider", "keywords"),
    [("openai strict", OPENAI_STRICT), ("anthropic", ANTHROPIC), ("gemini", GEMINI), ("llama.cpp", LLAMA_CPP)],
)
def test_only_keywords_in_the_provider_subset_are_used(schema: dict, provider: str, keywords: set[str]) -> None:
    used = {key for item in subschemas(schema) for key in item}
    assert used <= keywords, f"{provider} does not take {sorted(used - keywords)}"


def test_no_enum_is_empty_and_every_enum_is_typed(schema: dict) -> None:
    for item in subschemas(schema):
        if "enum" in item:
            assert item["enum"] and item["type"] == "string"


def test_anthropic_strict_limit_on_union_parameters_holds(schema: dict) -> None:
    unions = sum(1 for item in subschemas(schema) if "anyOf" in item or isinstance(item.get("type"), list))
    assert unions <= 16


def test_pydantic_ai_openai_strict_transformer_keeps_the_schema_as_it_is(schema: dict) -> None:
    judged = OpenAIJsonSchemaTransformer(copy.deepcopy(schema), strict=None)
    assert judged.walk() == schema
    assert judged.is_strict_compatible
    assert OpenAIJsonSchemaTransformer(copy.deepcopy(schema), strict=True).walk() == schema


def test_pydantic_ai_gemini_transformer_keeps_the_schema_as_it_is(schema: dict) -> None:
    assert GoogleJsonSchemaTransformer(copy.deepcopy(schema)).walk() == schema
