"""A block that reads big values, as a ratio to the same block reading a small value with a preview as long; and
what the step's look for secrets costs beside the rendering of the same value.

Run: `PYTHONPATH=core python bench/bench_big_values.py [rounds]`. Prints figures only. The cases are run in
interleaved rounds (each round runs every case once) so that the machine's noise hits them alike; each
figure is the median over the rounds. To compare two versions, run it on each, alternately, several times
(`git archive <commit> | tar -x -C /tmp/old` gives the old one).

A big value's preview is longer than a tiny value's, and a longer prompt costs more to render, scrub and
send whatever the value's size. So each big value is compared with a small value of its kind whose preview
is as long (its "twin": the preview is cut at the same token budget): the ratio is what the size costs
beyond its preview. The ratio to a block reading a 10-element list (the preview's length included) is shown
too, and both previews' rendering alone. Block times are given as CPU time (this process, both threads: what
the size adds) and wall time (which a machine shared with other work inflates).

The look for secrets (what a step does when it starts, for each value it reads) walks at most 1,000 values
inside each; the prompt renders each value within its token budget. The goal is a look that costs no more
than the rendering, and a block reading big values within 1.1x of its twin.
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

BIG: dict[str, tuple[object, object]] = {
    "list of 10^6 ints": (CASES["list of 10^6 ints"], list(range(300))),
    "list of 10^7 ints": (list(range(10**7)), list(range(300))),
    "dict of 10^5 keys": (CASES["dict of 10^5 keys"], {f"k{i}": i for i in range(300)}),
    "str of 10 MB": (CASES["str of 10 MB"], "x" * 4000),
    "str of 100 MB": ("x" * (100 * 10**6), "x" * 4000),
    "bytes of 10 MB": (CASES["bytes of 10 MB"], b"x" * 4000),
    "bytes of 100 MB": (b"x" * (100 * 10**6), b"x" * 4000),
    "list of 10^6 texts": (CASES["list of 10^6 texts"], [f"row {i} of the table, with a few words" for i in range(300)]),
}
"""Each big value and its twin: a small value of the same kind whose preview is cut at the same budget."""


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
    return {label: wall for label, (wall, _) in timed(actions).items()}


def timed(actions: dict[str, Callable[[], object]]) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) milliseconds of each action over `ROUNDS` interleaved rounds."""
    for action in actions.values():
        action()  # warm up
    samples: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label in actions}
    for _ in range(ROUNDS):
        for label, action in actions.items():
            wall, cpu = time.perf_counter(), time.process_time()
            action()
            samples[label][0].append((time.perf_counter() - wall) * 1000)
            samples[label][1].append((time.process_time() - cpu) * 1000)
    return {label: (statistics.median(walls), statistics.median(cpus)) for label, (walls, cpus) in samples.items()}


def look(value: object) -> None:
    step_scrubber(REDACTION, step_locals={"data": value}, step_globals={}, reads=["data"])


def render(value: object) -> str:
    return render_value(value, max_tokens=200, style="default", counter=BUDGET_COUNTER, redaction=REDACTION)


def main() -> None:
    parts = {}
    for label, value in CASES.items():
        parts[f"look {label}"] = lambda value=value: look(value)
        parts[f"render {label}"] = lambda value=value: render(value)
    figures = interleaved(parts)
    print("one step's look for secrets beside the rendering of the value it reads:")
    for label in CASES:
        print(f"  {label:<20} look {figures[f'look {label}']:7.3f} ms   render {figures[f'render {label}']:7.3f} ms")
    previews = timed(
        {f"{label} {which}": lambda value=value: render(value) for label, pair in BIG.items() for which, value in zip(("big", "twin"), pair)}
    )
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(script)))
    blocks = {"small list (10)": lambda: measure_block(CASES["small list (10)"])}
    for label, (big, twin) in BIG.items():
        blocks[f"{label} big"] = lambda value=big: measure_block(value)
        blocks[f"{label} twin"] = lambda value=twin: measure_block(value)
    with nh.run(executor):
        spent = timed(blocks)
    base_wall, base_cpu = spent["small list (10)"]
    print(
        f"a block reading the value (scripted model, one tool call), CPU ms (wall ms); ratios of CPU to the twin "
        f"(a small value with a preview as long) and to a 10-element list (CPU {base_cpu:.2f}, wall {base_wall:.2f} ms):"
    )
    for label, (big, twin) in BIG.items():
        (big_wall, big_cpu), (twin_wall, twin_cpu) = spent[f"{label} big"], spent[f"{label} twin"]
        print(
            f"  {label:<19} {big_cpu:5.2f} ({big_wall:5.2f})  twin {twin_cpu:5.2f} ({twin_wall:5.2f})   "
            f"{big_cpu / twin_cpu:4.2f}x twin  {big_cpu / base_cpu:4.2f}x small;  previews alone: "
            f"{previews[f'{label} big'][1]:.3f} / {previews[f'{label} twin'][1]:.3f} ms, "
            f"{len(render(big))} / {len(render(twin))} chars"
        )


if __name__ == "__main__":
    main()
