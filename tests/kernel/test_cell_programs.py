"""`%%natural` cells whose program cannot run fail before any model request, saying why."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.utils.capture import capture_output
from kernel_scripts import assign, outcome, scripted
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk


class CountingModel:
    def __init__(self) -> None:
        self.requests = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        return ModelResponse(parts=[outcome("pass")])


@pytest.fixture
def counting(use_model: Any) -> CountingModel:
    model = CountingModel()
    use_model(FunctionModel(model, model_name="counting"))
    return model


@pytest.mark.parametrize("cell", ["\n   \n", "---\ndeny: [raise]\n---\n"], ids=["blank", "frontmatter-only"])
def test_cell_without_a_program_is_a_parse_error(shell: Any, counting: CountingModel, cell: str) -> None:
    with pytest.raises(nighthawk.NaturalParseError, match="the Natural block has no program"):
        shell.run_cell_magic("natural", "", cell)
    assert counting.requests == 0


def test_tag_like_text_in_a_cell_raises_name_error_with_an_escape_hint(shell: Any, counting: CountingModel) -> None:
    with pytest.raises(NameError, match=r"escape it as `\\<li>`"):
        shell.run_cell_magic("natural", "", "Wrap each item in <li> tags.")
    assert counting.requests == 0


def test_write_binding_with_a_space_in_a_cell_is_a_parse_error(shell: Any, counting: CountingModel) -> None:
    shell.user_ns["total"] = 0
    with pytest.raises(nighthawk.NaturalParseError, match=r"`<: total>` has a space after `<:`"):
        shell.run_cell_magic("natural", "", "Set <: total>.")
    assert counting.requests == 0


def test_cell_shows_the_write_binding_its_pass_left_unset(shell: Any, use_model: Any) -> None:
    use_model(scripted([assign("label", "'spam'"), outcome("pass")], [outcome("pass")]))
    with capture_output() as captured:
        result = shell.run_cell("%%natural\nClassify the text into <:label> and <:score>.")
    assert result.error_in_exec is None
    assert shell.user_ns["label"] == "spam"
    assert "score" not in shell.user_ns
    (display,) = captured.outputs
    assert "left unset: score" in display.data["text/plain"]
    assert "left unset: score" in display.data["text/html"]


def test_await_inside_a_cell_assignment_commits_the_awaited_value(shell: Any, use_model: Any) -> None:
    shell.run_cell("import asyncio\nasync def fetch(n):\n    await asyncio.sleep(0)\n    return n * 3")
    use_model(scripted([assign("total", "await fetch(4)"), outcome("return", return_expression="await fetch(total)")]))
    result = shell.run_cell("%%natural\nUse <fetch> to set <:total>, then return it tripled.")
    assert result.error_in_exec is None
    assert shell.user_ns["total"] == 12
    assert result.result == 36
