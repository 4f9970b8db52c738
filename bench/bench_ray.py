"""(f) `nighthawk.ray.map_batches` on a local two-CPU Ray cluster: rows/s with 2 actors against 1.

Run: `python bench/bench_ray.py [--quick]` (with nighthawk and the `ray` extra installed, or PYTHONPATH=core).
Prints figures; asserts nothing. A scripted model answers at once (zero latency), so the rows cost only
nighthawk's CPU per call: the figure is how well actors add up, not how well waits overlap. The same at
50 ms per request follows, for comparison: there each actor is bound by its waits, not by a CPU. Last, the
price of a budget: 2 actors at zero latency inside `nh.budget(requests=...)`, where every request is first
reserved at the group's ledger actor, against the same without a budget.

Rows/s are counted as the mapped batches reach the caller, from the first batch to the last, so starting
the actors is left out; each pool runs three times, interleaved with the other, and the best run counts
(the machine is shared: two actors only add up while two CPUs are free). The wall time of the best run,
startup included, and the load average are printed too.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext

# Read when Ray is imported: no auth token file in the home folder, and the node on loopback.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray  # noqa: E402
from pydantic_ai.messages import ModelResponse, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

import nighthawk as nh  # noqa: E402
import nighthawk.ray  # noqa: E402

QUICK = "--quick" in sys.argv
ROWS = 600 if QUICK else 2000


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


def timed(actors: int, latency_s: float, tag: str, group: AbstractContextManager[object] | None = None) -> tuple[float, float]:
    """Rows/s from the first mapped batch to the last, and the whole run's wall time."""
    # Materialised input, so only the map is timed; each run has new texts (nothing answered from memory).
    rows = ray.data.from_items([{"text": f"{tag} review {n}"} for n in range(ROWS)]).materialize()
    started = time.perf_counter()
    with group or nullcontext():  # the groups in force when the dataset is made bound it
        mapped = nighthawk.ray.map_batches(
            rows, label, input_columns=["text"], output_column="label", executor=functools.partial(executor, latency_s),
            actors=actors,
        )
    arrivals: list[tuple[float, int]] = []
    for batch in mapped.iter_batches(batch_size=None):
        arrivals.append((time.perf_counter(), len(batch["label"])))
    assert sum(count for _, count in arrivals) == ROWS
    after_first = ROWS - arrivals[0][1]
    return after_first / max(arrivals[-1][0] - arrivals[0][0], 1e-9), arrivals[-1][0] - started


def best(latency_s: float) -> dict[int, tuple[float, float]]:
    """Per pool size: the best rate of three runs, with that run's wall time."""
    runs: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    for attempt in range(3):
        for actors in runs:
            runs[actors].append(timed(actors, latency_s, f"{actors}-{latency_s}-{attempt}"))
    return {actors: max(found) for actors, found in runs.items()}


def budgeted() -> tuple[tuple[float, float], tuple[float, float]]:
    """2 actors at zero latency, best of three: without a budget group, then inside one."""
    plain, gated = [], []
    for attempt in range(3):
        plain.append(timed(2, 0.0, f"plain-{attempt}"))
        # A limit never reached: only the ledger's cost shows.
        gated.append(timed(2, 0.0, f"budget-{attempt}", nh.budget(requests=10 * ROWS)))
    return max(plain), max(gated)


def main() -> None:
    temp_dir = tempfile.mkdtemp(prefix="nh-ray-bench-")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        for latency_s, name in ((0.0, "(f) Ray, zero latency"), (0.05, "    for comparison, 50 ms per request")):
            (one, one_wall), (two, two_wall) = best(latency_s).values()
            load = ", ".join(f"{figure:.2f}" for figure in os.getloadavg())
            print(f"{name}: {ROWS} rows, concurrency 8 per actor, {os.cpu_count()} CPUs (load {load})")
            print(f"    1 actor : {one:7.1f} rows/s past startup  ({one_wall:.1f} s wall)")
            print(f"    2 actors: {two:7.1f} rows/s past startup  ({two_wall:.1f} s wall)")
            print(f"    2 actors / 1 actor: {two / one:.2f}x" + (" (goal >= 1.7x)" if not latency_s else ""), flush=True)
        (plain, _), (gated, _) = budgeted()
        print("    a budget group around the dataset, 2 actors, zero latency (each request reserved at its ledger)")
        print(f"    without: {plain:7.1f} rows/s   with: {gated:7.1f} rows/s   ({gated / plain:.2f}x)", flush=True)
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
