"""A model built from a `provider:model` string adapts a set of tool schemas to its provider once.

pydantic-ai rewrites every tool's JSON schema for the provider before each request; a block's steps send the
same tool definitions every time, so the model built for them keeps the rewritten definitions of a set it
has sent twice, keyed by the definition objects themselves.
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref

import pytest
import pydantic_ai.models as pydantic_ai_models
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.output import OutputObjectDefinition
from pydantic_ai.tools import ToolDefinition

import nighthawk as nh
from nighthawk.model import _provider_models, _schema_adaptation
from nighthawk.prompting import _tokens

from support.http_steps import assign_and_pass, http_executor, serving


@pytest.fixture
def adaptations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the tools whose schemas pydantic-ai adapts, in order."""
    seen: list[str] = []
    adapt = pydantic_ai_models._customize_tool_def

    def counting(transformer, tool_def):
        seen.append(tool_def.name)
        return adapt(transformer, tool_def)

    monkeypatch.setattr(pydantic_ai_models, "_customize_tool_def", counting)
    return seen


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Model:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    built, _ = _provider_models.build_model("openai-chat:gpt-test", None)
    return built


def tool(name: str, **properties: dict) -> ToolDefinition:
    schema = {"type": "object", "properties": properties, "required": sorted(properties)}
    return ToolDefinition(name=name, parameters_json_schema=schema)


@nh.natural_function
def increment(x: int) -> int:
    y = 0
    """natural
    Set <:y> to <x> + 1.
    """
    return y


def test_the_steps_of_a_block_over_http_adapt_its_tool_schemas_once(monkeypatch, adaptations):
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")
    with serving(monkeypatch, lifetime=50.0) as server:
        server.push(*[assign_and_pass() for _ in range(6)])
        with nh.run(http_executor()):
            assert [increment(x) for x in range(6)] == [1, 2, 3, 4, 5, 6]
    assert server.request_count == 6
    assert sorted(adaptations) == ["nh_assign", "nh_assign", "nh_eval", "nh_eval", "nh_outcome", "nh_outcome"]
    first, *later = server.requests
    assert all(request.body["tools"] == first.body["tools"] for request in later)


def test_the_adapted_parameters_are_the_ones_pydantic_ai_makes(model):
    parameters = ModelRequestParameters(
        function_tools=[tool("lookup", key={"type": "string"})],
        output_tools=[tool("final_result", answer={"type": "integer"})],
        output_object=OutputObjectDefinition(json_schema={"type": "object", "properties": {"a": {"type": "string"}}}),
        allow_text_output=True,
    )
    expected = Model.customize_request_parameters(model, parameters)
    for _ in range(3):  # adapted, adapted and kept, then from the kept adaptation
        assert model.customize_request_parameters(parameters) == expected


def test_a_set_sent_again_is_adapted_no_more(model, adaptations):
    tools = [tool("lookup", key={"type": "string"}), tool("store", value={"type": "integer"})]
    for _ in range(5):
        model.customize_request_parameters(ModelRequestParameters(function_tools=list(tools)))
    assert adaptations == ["lookup", "store", "lookup", "store"]


def test_a_set_sent_once_is_not_kept(model):
    sent = [ModelRequestParameters(function_tools=[tool(f"tool_{n}", k={"type": "string"})]) for n in range(100)]
    for parameters in sent:  # (all alive: a set that died may leave its ids to a new one, which is then kept)
        model.customize_request_parameters(parameters)
    assert not model.customize_request_parameters._kept


def test_new_definitions_with_the_same_name_are_adapted_anew(model, adaptations):
    first = model.customize_request_parameters(ModelRequestParameters(function_tools=[tool("lookup", key={"type": "string"})]))
    second = model.customize_request_parameters(ModelRequestParameters(function_tools=[tool("lookup", n={"type": "integer"})]))
    assert adaptations == ["lookup", "lookup"]
    assert list(first.function_tools[0].parameters_json_schema["properties"]) == ["key"]
    assert list(second.function_tools[0].parameters_json_schema["properties"]) == ["n"]


def test_each_request_gets_its_own_lists_of_adapted_definitions(model):
    tools = [tool("lookup", key={"type": "string"})]
    first = model.customize_request_parameters(ModelRequestParameters(function_tools=tools))
    second = model.customize_request_parameters(ModelRequestParameters(function_tools=tools))
    first.function_tools.clear()
    assert [t.name for t in second.function_tools] == ["lookup"]


def test_the_model_keeps_a_bounded_number_of_sets(model, adaptations):
    kept = _schema_adaptation._KEPT_SETS
    sets = [[tool(f"tool_{n}", key={"type": "string"})] for n in range(kept + 1)]
    for tools in sets:
        for _ in range(2):
            model.customize_request_parameters(ModelRequestParameters(function_tools=tools))
    model.customize_request_parameters(ModelRequestParameters(function_tools=sets[-1]))  # still kept
    model.customize_request_parameters(ModelRequestParameters(function_tools=sets[0]))  # the oldest, dropped
    assert len(adaptations) == 2 * (kept + 1) + 1
    assert adaptations[-1] == "tool_0"


@pytest.fixture
def threads_switching_often():
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("threads_switching_often")
def test_threads_sharing_a_model_get_its_adaptations_right(model):
    sets = [[tool(f"tool_{n}", key={"type": "string"})] for n in range(_schema_adaptation._KEPT_SETS + 16)]
    expected = [Model.customize_request_parameters(model, ModelRequestParameters(function_tools=s)) for s in sets]
    failures: list[BaseException] = []

    def requests(offset: int) -> None:
        try:
            for round in range(150):
                for n in range(len(sets)):
                    k = (n + offset * 7 + round) % len(sets)
                    assert model.customize_request_parameters(ModelRequestParameters(function_tools=sets[k])) == expected[k]
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=requests, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_built_model_is_freed_without_a_cyclic_collection(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    model, _ = _provider_models.build_model("openai-chat:gpt-test", None)
    gone = weakref.ref(model)
    model.customize_request_parameters(ModelRequestParameters(function_tools=[tool("lookup", key={"type": "string"})]))
    enabled = gc.isenabled()
    gc.disable()
    try:
        del model
        assert gone() is None
    finally:
        if enabled:
            gc.enable()


def test_a_model_class_with_its_own_adaptation_is_left_alone(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    class Adapting(OpenAIChatModel):
        def customize_request_parameters(self, model_request_parameters):
            return model_request_parameters

    model = Adapting("gpt-test")
    _schema_adaptation.adapt_schemas_once(model)
    assert "customize_request_parameters" not in vars(model)


def test_a_model_the_user_gives_is_not_changed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    given = OpenAIChatModel("gpt-test")
    built, _ = _provider_models.build_model(given, 2)
    assert built is given
    assert "customize_request_parameters" not in vars(given)
