"""Kernel extension figures: `%load_ext` cost, the first `%%natural` cell, the cost of rendering a step.

Run: `PYTHONPATH=core:. python bench/bench_kernel.py`. Prints medians; asserts nothing. Load and first-cell
figures come from fresh interpreters (what a new kernel pays); the machine is noisy, so compare figures
printed by the same run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH", "")]),
    "PYTHONWARNINGS": "ignore",
}
RUNS = 5

SHELL = """
import time, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
"""

LOAD = SHELL + """
{pre}
t = time.perf_counter(); shell.run_line_magic('load_ext', '{ext}'); print("FIGURES", time.perf_counter() - t)
"""

FIRST_CELL = SHELL + """
shell.run_line_magic('load_ext', 'nighthawk')
t = time.perf_counter()
import pydantic_ai
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel
import_s = time.perf_counter() - t
def script(messages, info):
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('nh_assign', {{'target_path': 'total', 'expression': 'sum(values)'}})])
    return ModelResponse(parts=[ToolCallPart('nh_outcome', {{'kind': 'pass'}})])
shell.user_ns.update(model=FunctionModel(script), values=[1, 2, 3])
shell.run_line_magic('nighthawk', 'model model')
shell.run_line_magic('nighthawk', 'display {display}')
times = []
for _ in range(4):
    t = time.perf_counter(); shell.run_cell_magic('natural', '', 'Sum <values> into <:total>.'); times.append(time.perf_counter() - t)
print("FIGURES", import_s, times[0], sorted(times[1:])[1])
"""


def _run(code: str) -> list[float]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    if done.returncode:
        raise RuntimeError(done.stderr)
    figures = [line for line in done.stdout.splitlines() if line.startswith("FIGURES ")][-1]
    return [float(x) for x in figures.split()[1:]]


def _median(code: str) -> list[float]:
    samples = [_run(code) for _ in range(RUNS)]
    return [statistics.median(column) for column in zip(*samples, strict=True)]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def bench_load() -> None:
    print(f"%load_ext (median of {RUNS} fresh interpreters, IPython already imported)")
    (cold,) = _median(LOAD.format(pre="", ext="nighthawk"))
    print(f"  %load_ext nighthawk, cold (imports the core)        {_ms(cold)}")
    (warm,) = _median(LOAD.format(pre="import nighthawk", ext="nighthawk"))
    print(f"  %load_ext nighthawk, core already imported          {_ms(warm)}")
    (alone,) = _median(LOAD.format(pre="", ext="nighthawk_ipython"))
    print(f"  %load_ext nighthawk_ipython (core not imported)     {_ms(alone)}")


def bench_first_cell() -> None:
    print(f"first %%natural cell (median of {RUNS} fresh interpreters, instant scripted model, one tool round)")
    for display in ("html", "none"):
        import_s, first, steady = _median(FIRST_CELL.format(display=display))
        print(f"  display={display:<5} import pydantic_ai {_ms(import_s)} | first cell {_ms(first)} | later cells {_ms(steady)}"
              f" | first-cell overhead {_ms(first - steady)}")


def bench_render() -> None:
    sys.path[:0] = [str(REPO / "core"), str(REPO)]
    from nighthawk import events

    from nighthawk_ipython import StepView
    from nighthawk_ipython._display import CellView

    def step(calls: int) -> list[events.Event]:
        out: list[events.Event] = [
            events.StepStarted(step_id="In[1]:2", invocation_id="i", parent_invocation_id=None, run_id="r",
                               scope_id="s", program="p", model="m", allowed_outcomes=("pass",)),
        ]
        for n in range(calls):
            out.append(events.ToolCallStarted(invocation_id="i", call_id=str(n), tool_name="nh_eval", arguments='{"expression":"1"}'))
            out.append(events.ToolCallFinished(invocation_id="i", call_id=str(n), tool_name="nh_eval", result="1",
                                               error_kind=None, error_message=None, duration_s=0.001))
        out.append(events.OutcomeReached(invocation_id="i", kind="pass"))
        out.append(events.StepFinished(invocation_id="i", status="completed", duration_s=0.1))
        return out

    stream = step(50)
    StepView(stream[0])  # imports outside the timing
    live, static = [], []
    for _ in range(20):
        t = time.perf_counter()
        cell = CellView(mode="widget")
        view = StepView(stream[0])
        cell.add(view)
        for event in stream[1:]:
            view.apply(event)
        cell.live_html()
        live.append(time.perf_counter() - t)
        t = time.perf_counter()
        cell._repr_mimebundle_()
        static.append(time.perf_counter() - t)
    print("display of one step with 50 tool calls (median of 20, no kernel attached)")
    print(f"  apply 102 events and render the live view once       {_ms(statistics.median(live))}")
    print(f"  final text/plain + text/html bundle                 {_ms(statistics.median(static))}")


if __name__ == "__main__":
    bench_load()
    bench_first_cell()
    bench_render()
