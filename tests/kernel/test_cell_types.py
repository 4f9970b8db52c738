"""The type matrix for `%%natural` cells: an annotation in the namespace (`result: Report`) types a binding.

Also: an unannotated notebook variable is untyped in a cell (rebinding it to another type is ordinary
notebook Python), and a string annotation (`from __future__ import annotations`) is resolved.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kernel_scripts import assign, outcome, scripted
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from type_cases import CASES, COERCIBLE, NAMESPACE, Report, TypeCase, same


def declare(shell: Any, case: TypeCase) -> None:
    """What a user does: the types live in the notebook, an earlier cell annotates `result`."""
    shell.user_ns.update(NAMESPACE)
    shell.user_ns["Expected"] = case.annotation
    assert shell.run_cell("result: Expected").error_in_exec is None


def expected(case: TypeCase) -> object:
    return eval(case.expected, dict(NAMESPACE))  # noqa: S307 - the case's own expression


class Recorder:
    """A scripted model that also keeps the tool results it was sent."""

    def __init__(self, *responses: list[ToolCallPart]) -> None:
        self.responses = list(responses)
        self.results: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        self.results += [str(part.content) for part in last.parts if getattr(part, "part_kind", "") == "tool-return"]
        return ModelResponse(parts=self.responses.pop(0))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_value_of_the_annotated_type_is_committed(shell: Any, use_model: Any, case: TypeCase) -> None:
    declare(shell, case)
    use_model(scripted([assign("result", case.valid), outcome("pass")]))
    shell.run_cell_magic("natural", "", "Set <:result>.")
    assert type(shell.user_ns["result"]) is case.committed_type
    assert same(shell.user_ns["result"], expected(case))


@pytest.mark.parametrize("case", COERCIBLE, ids=lambda case: case.id)
def test_convertible_value_is_committed_as_the_annotated_type(shell: Any, use_model: Any, case: TypeCase) -> None:
    declare(shell, case)
    use_model(scripted([assign("result", case.coercible), outcome("pass")]))
    shell.run_cell_magic("natural", "", "Set <:result>.")
    assert type(shell.user_ns["result"]) is case.committed_type
    assert same(shell.user_ns["result"], expected(case))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_wrong_value_is_refused_then_the_retry_is_committed(shell: Any, use_model: Any, case: TypeCase) -> None:
    declare(shell, case)
    recorder = Recorder([assign("result", case.invalid)], [assign("result", case.valid), outcome("pass")])
    use_model(FunctionModel(recorder, model_name="recorder"))
    shell.run_cell_magic("natural", "", "Set <:result>.")
    error = json.loads(recorder.results[0])["error"]
    assert error["kind"] == "invalid_input"
    assert case.label in error["message"]
    assert same(shell.user_ns["result"], expected(case))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_return_of_the_type_is_the_cell_value(shell: Any, use_model: Any, case: TypeCase) -> None:
    declare(shell, case)
    use_model(scripted([outcome("return", return_expression=case.valid)]))
    result = shell.run_cell("%%natural\nReturn the value.")
    assert result.error_in_exec is None
    assert same(result.result, expected(case))


def test_unannotated_notebook_variable_can_be_rebound_to_another_type(shell: Any, use_model: Any) -> None:
    shell.user_ns["data"] = [{"a": 1}, {"a": 2}]
    shell.user_ns["pd"] = NAMESPACE["pd"]
    use_model(scripted([assign("data", "pd.DataFrame(data)"), outcome("pass")]))
    shell.run_cell_magic("natural", "", "Turn <:data> into a DataFrame.")
    assert type(shell.user_ns["data"]).__name__ == "DataFrame"
    assert list(shell.user_ns["data"]["a"]) == [1, 2]


def test_string_annotation_in_the_namespace_types_the_binding(shell: Any, use_model: Any) -> None:
    shell.user_ns["Report"] = Report
    shell.user_ns.setdefault("__annotations__", {})["report"] = "Report"  # `from __future__ import annotations`
    use_model(scripted([assign("report", "{'title': 'q3', 'score': '7'}"), outcome("pass")]))
    shell.run_cell_magic("natural", "", "Fill <:report>.")
    assert shell.user_ns["report"] == Report(title="q3", score=7)


def test_quoted_name_inside_an_optional_annotation_types_the_binding(shell: Any, use_model: Any) -> None:
    shell.user_ns["Report"] = Report
    shell.run_cell("from typing import Optional\nlatest: Optional['Report'] = None")
    use_model(scripted([assign("latest", "{'title': 'q3', 'score': '7'}"), outcome("pass")]))
    shell.run_cell_magic("natural", "", "Fill <:latest>.")
    assert shell.user_ns["latest"] == Report(title="q3", score=7)
