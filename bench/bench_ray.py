"""(f) `nighthawk.ray.map_batches` on a local two-CPU Ray cluster: rows/s with 2 actors against 1.

Run: `python bench/bench_ray.py [--quick]` (with nighthawk and the `ray` extra installed, or PYTHONPATH=core).
Prints figures; asserts nothing. A scripted model answers at once (zero latency), so the rows cost only
nighthawk's CPU per call: the figure is how well actors add up, not how well waits overlap. The same at
50 ms per request follows, for comparison: there each actor is bound by its waits, not by a CPU.

Each pool is timed on N and on 2N rows; the rate is N / (time(2N) - time(N)), so starting the actors and
the first batches (the same in both runs) is left out. The wall time of the 2N run, startup included, is
printed too, and the load average: on a shared machine two actors only add up when two CPUs are free.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import sys
import tempfile
import time

# Read when Ray is imported: no auth token file in the home folder, and the node on loopback.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray  # noqa: E402
from pydantic_ai.messages import ModelResponse, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

import nighthawk as nh  # noqa: E402
import nighthawk.ray  # noqa: E402

QUICK = "--quick" in sys.argv
ROWS = 400 if QUICK else 1500


@nh.natural_function
def label(text: str) -> str:
    """natural
    Label <text>.
    """


def executor(latency_s: float) -> nh.AgentStepExecutor:
    async def model(messages: list, info: AgentInfo) -> ModelResponse:
        if latency_s:
            await asyncio.sleep(latency_s)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "text.upper()"})])

    configuration = nh.StepExecutorConfiguration(model=FunctionModel(model, model_name=f"latency-{latency_s}"))
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


def timed(actors: int, latency_s: float, count: int, tag: str) -> float:
    # Materialised input, so only the map is timed; each run has new texts (nothing answered from memory).
    rows = ray.data.from_items([{"text": f"{tag} review {n}"} for n in range(count)]).materialize()
    started = time.perf_counter()
    mapped = nighthawk.ray.map_batches(
        rows, label, input_columns=["text"], output_column="label", executor=functools.partial(executor, latency_s), actors=actors
    )
    done = mapped.take_all()
    elapsed = time.perf_counter() - started
    assert len(done) == count
    return elapsed


def rate(actors: int, latency_s: float) -> tuple[float, float]:
    """Rows/s past startup, and the wall time of the larger run."""
    once = timed(actors, latency_s, ROWS, f"a{actors}-{latency_s}-once")
    twice = timed(actors, latency_s, 2 * ROWS, f"a{actors}-{latency_s}-twice")
    return ROWS / max(twice - once, 1e-9), twice


def main() -> None:
    temp_dir = tempfile.mkdtemp(prefix="nh-ray-bench-")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        timed(1, 0.0, 64, "warm-up")
        for latency_s, name in ((0.0, "(f) Ray, zero latency"), (0.05, "    for comparison, 50 ms per request")):
            one, one_wall = rate(1, latency_s)
            two, two_wall = rate(2, latency_s)
            load = ", ".join(f"{figure:.2f}" for figure in os.getloadavg())
            print(f"{name}: {ROWS} and {2 * ROWS} rows, concurrency 8 per actor, {os.cpu_count()} CPUs (load {load})")
            print(f"    1 actor : {one:7.1f} rows/s past startup  ({2 * ROWS} rows in {one_wall:.1f} s wall)")
            print(f"    2 actors: {two:7.1f} rows/s past startup  ({2 * ROWS} rows in {two_wall:.1f} s wall)")
            print(f"    2 actors / 1 actor: {two / one:.2f}x" + (" (goal >= 1.7x)" if not latency_s else ""), flush=True)
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
