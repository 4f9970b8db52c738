"""What the step display costs when one cell runs many steps: time and saved-notebook bytes per step.

Run: `python bench/bench_display.py [--repeat 3] [--repo PATH]`. For 1, 50 and 300 steps in one cell (a
natural function called in a loop, answered instantly by a scripted model) and for each display mode, a
notebook is executed with nbclient's defaults (widget state stored, as `jupyter nbconvert --execute` does)
and saved. Prints, per mode and step count, the median wall time of the loop cell (nbclient's timing metadata, which
includes the end-of-cell display), the kernel's CPU time over it, the CPU time and saved bytes the display
adds per step next to the same notebook with the display off (`none`), and the display's share of the
cell's CPU time. Asserts nothing.
`--repo` measures another checkout (for example the base commit) with the same notebooks.

Wall and CPU times of whole kernels are noisy on a shared machine, so a second table measures the display's
own work in this process (an IPython shell without a kernel, hence no live widget): the CPU time of every
thread spent in what only runs because a display listens (the runner's locals snapshots, building and
delivering events, the end-of-cell display), against the cell's CPU time with the display off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODES = ("none", "text", "html", "widget")
STEPS = (1, 50, 300)

SETUP = '''\
%load_ext nighthawk
import nighthawk
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

def script(messages, info):
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "label", "expression": "'bug' if 'crash' in text else 'idea'"})])
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])

scripted = FunctionModel(script, model_name="scripted")
%nighthawk model scripted
%nighthawk display none

@nighthawk.natural_function
def classify(text):
    label = ""
    """natural
    Label <text> as bug or idea in <:label>.
    """
    return label

texts = [f"crash report {n}" if n % 3 else f"feature idea {n}" for n in range(300)]
warm = classify(texts[0])  # imports and first-call costs stay out of the measured cell'''


def _notebook(mode: str, steps: int) -> Any:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell(f"%nighthawk display {mode}\nimport time\nstarted_cpu = time.process_time()"),
        nbformat.v4.new_code_cell(f"labels = [classify(text) for text in texts[:{steps}]]"),
        # Kernel CPU time (all its threads) over the loop cell and its end-of-cell display: far less
        # sensitive than wall time to other work on a shared machine.
        nbformat.v4.new_code_cell("print(f'CPU {time.process_time() - started_cpu:.4f}')"),
    ]
    return notebook


def _env(repo: Path) -> dict[str, str]:
    paths = [str(repo / "core"), str(repo), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "NIGHTHAWK_TOKENIZER": "estimate", "PYTHONWARNINGS": "ignore"}


def _run(mode: str, steps: int, repo: Path) -> tuple[float, float, int]:
    """Execute one notebook; return the loop cell's wall and kernel CPU seconds and the saved notebook's size."""
    import nbclient
    import nbformat

    notebook = _notebook(mode, steps)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=True).execute(env=_env(repo))
    timing = notebook.cells[-2].metadata["execution"]
    cpu = float(notebook.cells[-1].outputs[0]["text"].split()[1])
    notebook.cells[-1].outputs = []  # the same few bytes in every mode
    started = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
    ended = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    for cell in notebook.cells:  # timestamps differ run to run; they are not the display's bytes
        cell.metadata.pop("execution", None)
    return (ended - started).total_seconds(), cpu, len(nbformat.writes(notebook).encode())


def _accumulate(totals: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, adding the CPU time its calls take on their thread to `totals[name]`."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            totals[name] = totals.get(name, 0.0) + time.thread_time() - started

    return timed


def breakdown(repeat: int) -> None:
    """The display's own CPU time per step, measured inside one IPython shell."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.run_cell(SETUP)
    from nighthawk import events
    from nighthawk.road import runner

    from nighthawk_ipython._state import state_for

    totals: dict[str, float] = {}
    runner._snapshot = _accumulate(totals, "snapshots", runner._snapshot)  # type: ignore[attr-defined]
    events.emit = _accumulate(totals, "events", events.emit)  # every listener, the displayer included
    displayer = state_for(shell).displayer
    if hasattr(displayer, "flush"):  # older checkouts display each step as it ends, inside "events"
        displayer.flush = _accumulate(totals, "final display", displayer.flush)  # type: ignore[method-assign]
    print(f"\ndisplay's own CPU time in one shell (median of {repeat}; 300 steps; no kernel, so no live widget)")
    print("{:<7} {:>8} {:>10} {:>10} {:>14} {:>8}".format("mode", "cell s", "snapshots", "events", "final display", "share"))
    cells: dict[str, list[float]] = {}
    parts: dict[str, list[dict[str, float]]] = {}
    for _ in range(repeat):
        for mode in MODES:
            shell.run_line_magic("nighthawk", f"display {mode}")
            totals.clear()
            with capture_output():
                started = time.process_time()
                shell.run_cell("labels = [classify(text) for text in texts]")
                cells.setdefault(mode, []).append(time.process_time() - started)
            parts.setdefault(mode, []).append(dict(totals))
    base = statistics.median(cells["none"])
    for mode in MODES:
        share = {name: statistics.median(run.get(name, 0.0) for run in parts[mode]) for name in ("snapshots", "events", "final display")}
        own = sum(share.values())
        print(
            f"{mode:<7} {statistics.median(cells[mode]):>8.3f} {share['snapshots'] * 1000:>8.1f}ms {share['events'] * 1000:>8.1f}ms"
            f" {share['final display'] * 1000:>12.1f}ms {own / base * 100:>7.1f}%"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode and step count (median reported)")
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose packages the kernels import")
    parser.add_argument("--breakdown-only", action="store_true", help="only the in-process table (fast)")
    args = parser.parse_args()
    sys.path[:0] = [str(args.repo.resolve() / "core"), str(args.repo.resolve())]
    # Checkouts older than issue 11 measured prompts with tiktoken; keep them from trying a download.
    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")
    if args.breakdown_only:
        breakdown(args.repeat)
        return
    samples: dict[tuple[str, int], list[tuple[float, float, int]]] = {}
    for _ in range(args.repeat):
        for steps in STEPS:
            for mode in MODES:  # interleaved, so the machine's noise hits every mode alike
                samples.setdefault((mode, steps), []).append(_run(mode, steps, args.repo.resolve()))
    print(f"step display cost, {args.repo.resolve()} (median of {args.repeat}; nbclient defaults, widget state stored)")
    print("cell = the loop cell's wall time; cpu = kernel CPU time over it; + = added by the display against `none`")
    header = ("steps", "mode", "cell s", "cpu s", "+cpu ms/step", "+cpu share", "notebook B", "+B/step")
    print("{:>5} {:<7} {:>7} {:>7} {:>12} {:>10} {:>11} {:>8}".format(*header))
    for steps in STEPS:
        base = [statistics.median(column) for column in zip(*samples[("none", steps)], strict=True)]
        for mode in MODES:
            wall, cpu, size = (statistics.median(column) for column in zip(*samples[(mode, steps)], strict=True))
            print(
                f"{steps:>5} {mode:<7} {wall:>7.3f} {cpu:>7.3f} {(cpu - base[1]) * 1000 / steps:>12.2f}"
                f" {(cpu - base[1]) / base[1] * 100:>9.1f}% {size:>11,.0f} {(size - base[2]) / steps:>8,.0f}"
            )
    breakdown(args.repeat)

if __name__ == "__main__":
    main()
