"""The three reference blocks whose first request measures the fixed part of every prompt.

`compute([10.0, 20.0], 0.1)` reads, computes and writes; `triage(["hello"])` sits in a loop (every outcome
kind offered); `tidy("  x  ")` calls a function of its scope. Used by tests/core/test_fixed_prompt.py and
bench/bench_tokens.py.
"""

from __future__ import annotations

import json

import nighthawk as nh
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["REFERENCE_CALLS", "compute", "first_request", "request_texts", "tidy", "triage"]


def normalize(text: str) -> str:
    """Trim a sentence."""
    return text.strip()


@nh.natural_function
def compute(prices: list[float], discount: float) -> float:
    total = 0.0
    """natural
    Apply <discount> to each price in <prices> and store the sum in <:total>.
    """
    return total


@nh.natural_function
def triage(messages: list[str]) -> list[str]:
    kept = []
    for message in messages:
        """natural
        If <message> is spam, continue. If it says stop, break. Otherwise append it to <kept>.
        """
        kept.append(message)
    return kept


@nh.natural_function
def tidy(raw: str) -> str:
    cleaned = ""
    """natural
    Use <normalize> on <raw> and store the result in <:cleaned>.
    """
    return cleaned


REFERENCE_CALLS = {
    "compute": lambda: compute([10.0, 20.0], 0.1),
    "triage": lambda: triage(["hello"]),
    "tidy": lambda: tidy("  x  "),
}
"""Each reference block's first call, by name."""


def first_request(call) -> dict[str, str | list[str]]:
    """Run `call` on a model that captures its first request and then ends the step."""
    captured: dict[str, str | list[str]] = {}

    def capture(messages: list, info: AgentInfo) -> ModelResponse:
        if not captured:
            user = "".join(
                part.content for part in messages[0].parts if getattr(part, "part_kind", "") == "user-prompt"
            )
            captured["instructions"] = info.instructions or ""
            captured["user"] = user
            captured["tools"] = [
                json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters_json_schema})
                for t in [*info.function_tools, *info.output_tools]
            ]
            captured["names"] = [t.name for t in [*info.function_tools, *info.output_tools]]
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"kind": "pass"})])

    executor = nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model=FunctionModel(capture))
    )
    with nh.run(executor):
        try:
            call()
        except Exception:
            pass  # only the first request matters here
    return captured


def request_texts(call) -> list[str]:
    """The texts of `call`'s first request that are paid in tokens: instructions, user prompt, each tool."""
    request = first_request(call)
    return [str(request["instructions"]), str(request["user"]), *request["tools"]]
