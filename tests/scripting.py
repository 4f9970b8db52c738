"""Scripted pydantic-ai models for tests: a model is a list of answers, one per request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh


def call(tool_name: str, **arguments: Any) -> ToolCallPart:
    """A tool call part, as a model would send it."""
    return ToolCallPart(tool_name, arguments)


def _outcome_branches(info: AgentInfo) -> list[dict[str, Any]]:
    """The branches of the union the one output tool, `nh_outcome`, takes under `outcome`."""
    (tool,) = info.output_tools
    assert tool.name == "nh_outcome"
    union = tool.parameters_json_schema["properties"]["outcome"]
    return list(union.get("anyOf", [union]))


def offered_kinds(info: AgentInfo) -> list[str]:
    """The outcome kinds a request offers, in the order of the schema's branches."""
    return [kind for branch in _outcome_branches(info) for kind in branch["properties"]["kind"]["enum"]]


def offered_raise_types(info: AgentInfo) -> list[str]:
    """The exception names a request's `raise` outcome may use."""
    (branch,) = [branch for branch in _outcome_branches(info) if branch["properties"]["kind"]["enum"] == ["raise"]]
    return list(branch["properties"]["raise_error_type"]["anyOf"][0]["enum"])


def finish(kind: str = "pass", **fields: Any) -> ToolCallPart:
    """The outcome tool call that ends a step."""
    return ToolCallPart("nh_outcome", {"kind": kind, **fields})


@dataclass
class Script:
    """A scripted model: one list of parts (or text) per model request, in order; records what it saw."""

    rounds: list[list[ToolCallPart] | str]
    seen: list[list[ModelMessage]] = field(default_factory=list)
    infos: list[AgentInfo] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.infos.append(info)
        if not self.rounds:
            raise AssertionError(f"the model was asked {len(self.seen)} times; the script has no answer left")
        answer = self.rounds.pop(0)
        if isinstance(answer, str):
            return ModelResponse(parts=[TextPart(answer)])
        return ModelResponse(parts=list(answer))

    @property
    def requests(self) -> int:
        return len(self.seen)

    def last_tool_results(self) -> list[str]:
        """Contents of the tool returns the model received in its latest request."""
        request = self.seen[-1][-1]
        return [str(part.content) for part in request.parts if getattr(part, "part_kind", "") == "tool-return"]




def model_code(channel: str, expression: str, *, target: str = "result") -> list[ToolCallPart]:
    """The first answer of a model that runs `expression` through `channel`: `nh_eval`, `nh_assign` (to
    `target`) or a `return` outcome."""
    match channel:
        case "nh_eval":
            return [call("nh_eval", expression=expression)]
        case "nh_assign":
            return [call("nh_assign", target_path=target, expression=expression)]
        case "return":
            return [finish("return", return_expression=expression)]
    raise AssertionError(channel)


def scripted_executor(*rounds: list[ToolCallPart] | str, **configuration: Any) -> tuple[nh.AgentStepExecutor, Script]:
    """An executor on a FunctionModel that answers with `rounds`, and the script (to inspect requests)."""
    script = Script(list(rounds))
    config = nh.StepExecutorConfiguration(model=FunctionModel(script), **configuration)
    return nh.AgentStepExecutor.from_configuration(configuration=config), script
