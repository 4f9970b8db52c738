"""What a model that repeats itself costs one step: requests sent and input tokens, until the step ends.

Run with `PYTHONPATH=core python bench/bench_looping_model.py` (on any checkout: it uses only public names).
Scripted `FunctionModel`s, no network:

- `same failing call x20`: answers the first 20 requests with the same failing `nh_eval`, then passes;
- `same failing call forever`: always that call;
- `two calls in turn forever`: two calls with unchanging results, alternately.

Prints, for each, the requests the step sent, its input tokens (pydantic-ai's estimate for a scripted model)
and how it ended. Without a repeat check a looping step runs until its request budget (50 by default).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh


@nh.natural_function
def total(numbers: list[int]) -> int:
    """natural
    Return the sum of <numbers>.
    """


def answering(pick: Callable[[int], ToolCallPart]) -> FunctionModel:
    """A model whose n-th answer (0-based) is the call `pick(n)`."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answered = sum(1 for message in messages if message.kind == "response")
        return ModelResponse(parts=[pick(answered)])

    return FunctionModel(respond, model_name="looping")


def failing(_: int) -> ToolCallPart:
    return ToolCallPart("nh_eval", {"expression": "undefined_name"})


def twenty_then_pass(index: int) -> ToolCallPart:
    return failing(index) if index < 20 else ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "sum(numbers)"})


def in_turn(index: int) -> ToolCallPart:
    return ToolCallPart("nh_eval", {"expression": ("len(numbers)", "numbers[0]")[index % 2]})


CASES = {
    "same failing call x20": twenty_then_pass,
    "same failing call forever": failing,
    "two calls in turn forever": in_turn,
}


def main() -> None:
    print(f"{'model':28} {'requests':>8} {'input tokens':>12}  ended with")
    for name, pick in CASES.items():
        executor = nh.AgentStepExecutor.from_configuration(
            configuration=nh.StepExecutorConfiguration(model=answering(pick))
        )
        nh.session_usage().reset()
        try:
            with nh.run(executor):
                total([1, 2, 3])
            ended = "return"
        except nh.NighthawkError as exc:
            ended = f"{type(exc).__name__}: {str(exc)[:70]}…"
        totals = list(nh.session_usage().by_model().values())
        requests = sum(t.requests for t in totals)
        tokens = sum(t.input_tokens for t in totals)
        print(f"{name:28} {requests:>8} {tokens:>12}  {ended}")

if __name__ == "__main__":
    main()
