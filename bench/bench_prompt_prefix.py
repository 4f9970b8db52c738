"""Identical-prefix share of a map's first requests, with a large global in scope.

A provider's prompt cache reuses the longest identical start of a request. For each item of a 20-item
`nh.map` this takes the first request as the provider would read it (instructions, tool definitions, then
the user prompt), and prints the share of its characters that it has in common, from the start, with the
first item's request: averaged over the items, and the lowest.

Run: python bench/bench_prompt_prefix.py   (on another checkout: PYTHONPATH=that/core:that python ...)
"""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh

catalogue = {f"SKU-{i:04d}": {"name": f"product {i}", "price": round(1.5 * i, 2), "tags": ["spring", "home"]} for i in range(400)}
suppliers = {f"supplier {i}": {"country": "DE", "lead_days": i % 30, "rating": i % 5} for i in range(200)}
style_guide = "Write plainly; name the product first; give the price in euros; no exclamation marks. " * 20
banned_words = [f"word{i}" for i in range(300)]


@nh.natural_function
def describe(order: dict) -> str:
    """natural
    Write one line about the <catalogue> product of <order>, its <suppliers> entry, following <style_guide>
    and avoiding <banned_words>.
    """


def main() -> None:
    firsts: dict[str, str] = {}
    users: list[str] = []

    def model(messages: list, info: AgentInfo) -> ModelResponse:
        user = str(messages[0].parts[-1].content)
        if len(messages) == 1:
            tools = [{"name": t.name, "description": t.description, "parameters": t.parameters_json_schema} for t in (*info.function_tools, *info.output_tools)]
            request = (info.instructions or "") + json.dumps(tools) + user
            firsts[user] = request
            users.append(user)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "order['code']"})])

    items = [{"code": f"SKU-{i:04d}", "quantity": i % 7 + 1, "note": f"customer {i} asked for gift wrapping"} for i in range(20)]
    with nh.run(nh.AgentStepExecutor(nh.StepExecutorConfiguration(model=FunctionModel(model)))):
        nh.map(describe, items, concurrency=1, progress=False)
    requests = list(firsts.values())
    first = requests[0]

    def shared(other: str, first: str = first) -> int:
        length = 0
        for a, b in zip(first, other):
            if a != b:
                break
            length += 1
        return length

    shares = [shared(request) / len(request) for request in requests[1:]]
    print(f"{len(requests)} first requests, {len(first):,} characters each (about)")
    print(f"identical prefix share: mean {100 * sum(shares) / len(shares):.1f}%, lowest {100 * min(shares):.1f}%")
    user_shares = [shared(user, users[0]) / len(user) for user in users[1:]]
    print(f"of the user prompt alone: mean {100 * sum(user_shares) / len(user_shares):.1f}%, lowest {100 * min(user_shares):.1f}%")


if __name__ == "__main__":
    main()
