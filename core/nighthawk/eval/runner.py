"""Run the suite's checks through `nighthawk.map`: its concurrency, its budget group, its progress line.

A check is ordinary sync Python that calls natural functions, so the map cannot pause it at its blocks
the way it pauses one natural function. Each check therefore runs whole on a worker thread of a pool
sized to `concurrency`, and the map's item is a coroutine that awaits that thread: the waits for the
model overlap, the map counts every step's usage per check, and a budget around the map stops the run.
"""

from __future__ import annotations

import asyncio
import contextvars
import linecache
import secrets
import time
import traceback
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from ..budget import UsageBudget, UsageTotals, budget
from ..errors import BudgetExceededError, MapStoppedError
from ..events import Event, ModelText, OutcomeReached, ToolCallFinished, ToolCallStarted, listen
from ..road.runtime import get_step_executor
from .catalog import select
from .program import Program
from .results import CheckResult, ProgramResult, StepCall, SuiteResult

__all__ = ["run_suite"]

_PROGRAM_FILES = frozenset(str(Path(__file__).with_name(name)) for name in
                           ("programs_text.py", "programs_objects.py", "programs_python.py"))


@dataclass(frozen=True, kw_only=True)
class _Item:
    program: Program
    check_index: int
    run: int


def run_suite(
    only: Iterable[str] | None = None,
    *,
    runs: int = 1,
    concurrency: int = 4,
    limit: UsageBudget | None = None,
    model: str | None = None,
    progress: bool | None = False,
) -> SuiteResult:
    """Run every check of the chosen programs `runs` times with the executor in force (`nighthawk.run`).

    Args:
        only: Program names (all programs when `None`).
        runs: How many times each check runs.
        concurrency: Checks running at once.
        limit: A budget for the whole run (for example `UsageBudget(cost_usd=1.0)`); when it runs out the
            run stops and the checks it did not finish are reported as not run.
        model: The name to record for the model (default: the executor's label).
        progress: Show `nighthawk.map`'s progress line.

    Raises:
        ValueError: An unknown program name or a `runs` below 1.
    """
    from ..batch import map_reporting_items  # here: the batch layer loads only when a run starts

    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"`runs` must be a whole number of at least 1, got {runs!r}")
    programs = select(only)
    items = [_Item(program=p, check_index=i, run=r) for r in range(runs) for p in programs for i in range(len(p.checks))]
    usage: dict[int, UsageTotals] = {}
    stopped = ""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="nighthawk-eval") as pool:

        async def run_item(item: _Item, fresh: str) -> CheckResult:
            loop = asyncio.get_running_loop()
            # The copied context carries the executor in force and the item's usage group into the thread.
            return await loop.run_in_executor(pool, contextvars.copy_context().run, _run_check, item)

        with budget(limit or UsageBudget()) as group:
            try:
                # A token new to this run makes every item new to the map's session memory: an eval asks the
                # model again, never answers a check from an earlier run.
                results = map_reporting_items(
                    run_item, (items, [secrets.token_hex(8)] * len(items)), concurrency=concurrency,
                    on_error="collect", progress=progress, item_usage=lambda index, spent: usage.__setitem__(index, spent),
                )
            except (BudgetExceededError, MapStoppedError) as exc:
                group.close()  # a check still on a worker thread (the map cannot cancel threads) sends no more
                results, stopped = exc.partial or [], str(exc)
            except BaseException:  # an interrupt: the pool still waits for the checks on its threads
                group.close()
                raise
    failed = getattr(results, "errors", {})
    checks = []
    for index, item in enumerate(items):
        result = results[index] if index < len(results) else None
        if isinstance(failed.get(index), _RequestFailed):
            result = failed[index].result
        if result is None:
            result = CheckResult(program=item.program.name, check=item.program.checks[item.check_index].__name__,
                                 run=item.run, status="not run", failure=stopped)
        checks.append(_with_usage(result, usage.get(index)))
    return SuiteResult(
        model=model if model is not None else _model_label(),
        runs=runs,
        programs=tuple(
            ProgramResult(name=p.name, checks=tuple(c for c in checks if c.program == p.name)) for p in programs
        ),
        wall_time_s=time.monotonic() - started,
        stopped=stopped,
        version=_version(),
    )


class _RequestFailed(Exception):
    """A check failed because a model request failed: handed to the map (with the check's result), which stops
    the run when requests keep failing for a reason common to every check (`nighthawk.batch.stopping`)."""

    def __init__(self, result: CheckResult) -> None:
        super().__init__(result.failure)
        self.result = result


def _run_check(item: _Item) -> CheckResult:
    """Run one check on this (worker) thread, recording its steps' tool calls."""
    from ..batch.stopping import request_failure  # loaded with the batch layer, on the run's first check

    check = item.program.checks[item.check_index]
    steps = _StepRecorder()
    status, failure, request_failed = "passed", "", None
    started = time.monotonic()
    with listen(steps):
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - any failure of the program is the check failing
            if isinstance(exc, BudgetExceededError) and exc.level != "step":
                raise  # the run's budget (a step's own budget is this check failing): the map stops
            status, failure = "failed", _describe(exc, check.__name__)
            request_failed = exc if request_failure(exc) is not None else None
    result = CheckResult(
        program=item.program.name, check=check.__name__, run=item.run, status=status, failure=failure,
        wall_time_s=time.monotonic() - started, steps=tuple(steps.calls),
    )
    if request_failed is not None:
        raise _RequestFailed(result) from request_failed
    return result


def _describe(exc: BaseException, check: str) -> str:
    """The check's own line that failed (its `assert`, or its call of the program that raised), and the
    exception: a step's error is raised at the natural function's docstring, which says nothing."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename in _PROGRAM_FILES]
    own = [frame for frame in frames if frame.name == check]
    where = ""
    if own or frames:
        frame = (own or frames)[-1]
        where = (linecache.getline(frame.filename, frame.lineno or 0).strip() or frame.line or "") + "\n"
    text = str(exc)
    return f"{where}{type(exc).__name__}" + (f": {text}" if text else "")


class _StepRecorder:
    """An event listener keeping each tool call with its result, each outcome, and each response in which
    the model called no tool (what it wrote instead)."""

    def __init__(self) -> None:
        self.calls: list[StepCall] = []
        self._arguments: dict[str, str] = {}

    def __call__(self, event: Event) -> None:
        match event:
            case ToolCallStarted(call_id=call_id, arguments=arguments):
                self._arguments[call_id] = arguments
            case ToolCallFinished(call_id=call_id, tool_name=tool, result=result, error_message=error):
                shown = f"error: {error}" if error else result
                self.calls.append(StepCall(tool=tool, arguments=self._arguments.pop(call_id, ""), result=shown))
            case ModelText(text=text):
                self.calls.append(StepCall(tool="text", arguments="", result=text))
            case OutcomeReached(kind=kind):
                detail = event.return_expression or event.raise_message or ""
                result = event.return_value or event.raise_error_type or ""
                self.calls.append(StepCall(tool="outcome", arguments=f"{kind} {detail}".strip(), result=result))
            case _:
                pass


def _with_usage(result: CheckResult, spent: UsageTotals | None) -> CheckResult:
    if spent is None:
        return result
    return replace(
        result, requests=spent.requests, input_tokens=spent.input_tokens, output_tokens=spent.output_tokens,
        cost_usd=spent.cost_usd,
    )


def _model_label() -> str:
    executor = get_step_executor()
    return str(getattr(executor, "model_label", "") or type(executor).__name__)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nighthawk-jupyter")
    except PackageNotFoundError:
        return ""
