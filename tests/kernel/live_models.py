"""Scripted models imported *inside* the live kernels of the issue-10 tests (`from live_models import *`).

`directed` reads what to do from the block's own program, one directive a line, so a test cell says in
plain sight what the "model" will do:

- `EVAL expr`: call `nh_eval(expr)`, then return the tool's answer (the JSON envelope) as a string;
- `RETURN expr`: end with a `return` outcome whose `return_expression` is `expr`;
- `ASSIGN name = expr`: call `nh_assign`, then end with `pass`;
- `CALL tool`: call the user tool `tool` without arguments, then return the tool's answer (the envelope);
- `FAN tool count`: call `tool(count=count)`, then return the tool's value;
- `NEVER`: answer with an invalid outcome, every time (the step can never end);
- `RAISE`: end with a `raise` outcome, every time (whether the block allows it or not);
- anything else: end with `pass`.
"""

from __future__ import annotations

import json
import re
import time

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["directed", "sleeper", "slow_count"]

_DIRECTIVE = re.compile(r"^\s*(EVAL|RETURN|ASSIGN|CALL|FAN|NEVER|RAISE)\b ?(.*)$", re.MULTILINE)


def _program(messages: list[ModelMessage]) -> str:
    return str(messages[0].parts[-1].content)  # type: ignore[union-attr]


def _answer(messages: list[ModelMessage]) -> str:
    """The content of the last tool return the model was sent."""
    return str(messages[-1].parts[-1].content)  # type: ignore[union-attr]


def _finish(kind: str, **fields: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": kind, **fields})])


def _direct(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    found = _DIRECTIVE.search(_program(messages))
    first = len(messages) == 1
    if found is None:
        return _finish("pass")
    verb, argument = found.group(1), found.group(2).strip()
    match verb:
        case "EVAL":
            if first:
                return ModelResponse(parts=[ToolCallPart("nh_eval", {"expression": argument})])
            return _finish("return", return_expression=repr(_answer(messages)))
        case "RETURN":
            return _finish("return", return_expression=argument)
        case "ASSIGN":
            if first:
                name, _, expression = argument.partition("=")
                call = {"target_path": name.strip(), "expression": expression.strip()}
                return ModelResponse(parts=[ToolCallPart("nh_assign", call)])
            return _finish("pass")
        case "CALL":
            if first:
                return ModelResponse(parts=[ToolCallPart(argument, {})])
            return _finish("return", return_expression=repr(_answer(messages)))
        case "FAN":
            tool, count = argument.split()
            if first:
                return ModelResponse(parts=[ToolCallPart(tool, {"count": int(count)})])
            return _finish("return", return_expression=repr(json.loads(_answer(messages))["value"]))
        case "RAISE":
            return _finish("raise", raise_message="cannot")
        case _:  # NEVER
            return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return"})])


directed = FunctionModel(_direct, model_name="directed")


def _sleep(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    time.sleep(45)
    return _finish("pass")


sleeper = FunctionModel(_sleep, model_name="sleeper")
"""A sync scripted model that takes 45 s to answer."""


def slow_count(seconds: float) -> int:
    """Busy Python work for `seconds` (no sleeping: an interrupt has to stop running bytecode)."""
    count = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        count += 1
    return count
