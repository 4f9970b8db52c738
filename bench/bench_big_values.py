"""A block that reads big values, as a ratio to the same block reading a small one; and what the step's look
for secrets costs beside the rendering of the same value.

Run: `PYTHONPATH=core python bench/bench_big_values.py [rounds]`. Prints figures only. The cases are run in
interleaved rounds (each round runs every case once) so that the machine's noise hits them alike; each
figure is the median over the rounds. To compare two versions, run it on each, alternately, several times
(`git archive <commit> | tar -x -C /tmp/old` gives the old one).

The look for secrets (what a step does when it starts, for each value it reads) walks at most 1,000 values
inside each; the prompt renders each value within its token budget. The goal is a look that costs no more
than the rendering, and a block reading big values within 1.1x of one reading small values.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.prompting._render import render_value
from nighthawk.prompting._tokens import BUDGET_COUNTER

try:
    from nighthawk.secrets._scrubber import step_scrubber
except ImportError:  # a version from before the secrets package
    from nighthawk._secrets import step_scrubber  # type: ignore[no-redef]

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
REDACTION = nh.ContextRedaction()

CASES: dict[str, object] = {
    "small list (10)": list(range(10)),
    "list of 10^6 ints": list(range(10**6)),
    "dict of 10^5 keys": {f"k{i}": i for i in range(10**5)},
    "str of 10 MB": "x" * (10 * 10**6),
    "bytes of 10 MB": b"x" * (10 * 10**6),
    "list of 10^6 texts": [f"row {i} of the table, with a few words" for i in range(10**6)],
}


def script(messages: list, info: AgentInfo) -> ModelResponse:
    return ModelResponse(
        parts=[ToolCallPart("nh_assign", {"target_path": "size", "expression": "len(data)"}), ToolCallPart("nh_outcome", {"kind": "pass"})]
    )


@nh.natural_function
def measure_block(data: object) -> int:
    size = 0
    """natural
    Store the length of <data> in <:size>.
    """
    return size


def interleaved(actions: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median milliseconds of each action over `ROUNDS` rounds, each round running every action once."""
    for action in actions.values():
        action()  # warm up
    samples: dict[str, list[float]] = {label: [] for label in actions}
    for _ in range(ROUNDS):
        for label, action in actions.items():
            started = time.perf_counter()
            action()
            samples[label].append((time.perf_counter() - started) * 1000)
    return {label: statistics.median(values) for label, values in samples.items()}


def look(value: object) -> None:
    step_scrubber(REDACTION, step_locals={"data": value}, step_globals={}, reads=["data"])


def render(value: object) -> None:
    render_value(value, max_tokens=200, style="default", counter=BUDGET_COUNTER, redaction=REDACTION)


def main() -> None:
    parts = {}
    for label, value in CASES.items():
        parts[f"look {label}"] = lambda value=value: look(value)
        parts[f"render {label}"] = lambda value=value: render(value)
    figures = interleaved(parts)
    print("one step's look for secrets beside the rendering of the value it reads:")
    for label in CASES:
        print(f"  {label:<20} look {figures[f'look {label}']:7.3f} ms   render {figures[f'render {label}']:7.3f} ms")
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(script)))
    with nh.run(executor):
        blocks = interleaved({label: lambda value=value: measure_block(value) for label, value in CASES.items()})
    base = blocks["small list (10)"]
    print("a block reading the value (scripted model, one tool call):")
    for label, ms in blocks.items():
        print(f"  {label:<20} {ms:7.2f} ms   ratio {ms / base:4.2f}x")


if __name__ == "__main__":
    main()
