"""`nighthawk.eval`: a suite of 25 programs sharing Python state with natural code, to measure a model.

Run it from a shell with `nighthawk eval --model provider:model`, or from Python with the executor in
force:

    with nh.run(executor):
        result = nighthawk.eval.run_suite()
    nighthawk.eval.report(result)

Nothing here is imported by `import nighthawk`.
"""

from __future__ import annotations

from .catalog import PROGRAMS, select
from .program import Program, raises
from .report import Comparison, Report, compare, report
from .results import CheckResult, ProgramResult, StepCall, SuiteResult, load_result
from .runner import run_suite

__all__ = [
    "PROGRAMS",
    "CheckResult",
    "Comparison",
    "Program",
    "ProgramResult",
    "Report",
    "StepCall",
    "SuiteResult",
    "compare",
    "load_result",
    "raises",
    "report",
    "run_suite",
    "select",
]
