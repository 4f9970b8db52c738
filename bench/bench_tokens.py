"""First-request token cost of three reference blocks, split by part.

Count = tokens of (instructions + user prompt) + tokens of each offered tool serialised as JSON
`{"name", "description", "parameters"}` (function tools and output tools), for the first request of
`compute([10.0, 20.0], 0.1)`, `triage(["hello"])` and `tidy("  x  ")`.

Counts are exact (o200k_base) when tiktoken's vocabulary can be loaded (build one offline with
`../shared/tools/tiktoken_offline_cache.sh DIR`, then run with `TIKTOKEN_CACHE_DIR=DIR`), and estimated
(from the characters, `estimate_tokens`) otherwise; the output says which.

Run: python bench/bench_tokens.py
"""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh


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


def counter():
    """The exact o200k counter when its vocabulary loads, else the estimate; and its label."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return (lambda text: len(encoding.encode_ordinary(text))), "exact o200k_base"
    except Exception:  # offline with no cached vocabulary
        from nighthawk.prompting._tokens import estimate_tokens

        return estimate_tokens, "estimate (from the characters; o200k vocabulary not available)"


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


def main() -> None:
    count, label = counter()
    print(f"first-request tokens ({label})")
    print(f"{'block':<10}{'total':>7}{'system':>8}{'user':>6}{'tools':>7}  tool names")
    for name, call in (
        ("compute", lambda: compute([10.0, 20.0], 0.1)),
        ("triage", lambda: triage(["hello"])),
        ("tidy", lambda: tidy("  x  ")),
    ):
        request = first_request(call)
        system = count(str(request["instructions"]))
        user = count(str(request["user"]))
        tools = sum(count(tool) for tool in request["tools"])
        print(f"{name:<10}{system + user + tools:>7}{system:>8}{user:>6}{tools:>7}  {', '.join(request['names'])}")


if __name__ == "__main__":
    main()
