"""`nighthawk eval` and `python -m nighthawk.eval`: run the suite against a model, or compare two runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..configuration import DEFAULT_MODEL

if TYPE_CHECKING:
    from ..budget import UsageBudget
    from ..model.executor import AgentStepExecutor
    from .results import SuiteResult

__all__ = ["main"]

def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run the suite of shared-state programs against a model and report how many checks hold.",
    )
    parser.add_argument("--list", action="store_true", help="list the programs and exit")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="provider:model (default %(default)s); an OpenAI-compatible server through "
                             "OPENAI_BASE_URL with openai-chat:NAME")
    parser.add_argument("--runs", type=int, default=1, help="times each check runs (default 1)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these programs")
    parser.add_argument("--concurrency", type=int, default=4, help="checks running at once (default 4)")
    parser.add_argument("--budget", type=float, metavar="USD", help="cost cap in US dollars for the whole run")
    parser.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    parser.add_argument("--show-steps", action="store_true", help="list the tool calls of each failed check")
    parser.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                        help="print two saved runs side by side instead of running")
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "nighthawk eval") -> int:
    """Parse `argv` (default: the command line), act, and return the exit status."""
    parser = _parser(prog)
    args = parser.parse_args(argv)
    # Imported after parsing, so `--help` and usage errors stay quick.
    from ..budget import UsageBudget
    from ..errors import NighthawkError
    from .catalog import PROGRAMS, select
    from .report import compare_text, report_text
    from .results import load_result

    if args.list:
        width = max(len(program.name) for program in PROGRAMS)
        for program in PROGRAMS:
            print(f"{program.name.ljust(width)}  {len(program.checks)} checks  {program.summary}")
        return 0
    if args.compare:
        try:
            first, second = (load_result(path) for path in args.compare)
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
        print(compare_text(first, second))
        return 0
    if args.runs < 1:
        parser.error(f"`--runs` must be at least 1, got {args.runs!r}")
    if args.concurrency < 1:
        parser.error(f"`--concurrency` must be at least 1, got {args.concurrency!r}")
    try:
        select(args.only)
        limit = None if args.budget is None else UsageBudget(cost_usd=args.budget)
    except ValueError as exc:
        parser.error(str(exc).replace("`only`", "`--only`").replace("`UsageBudget.cost_usd`", "`--budget`"))
    try:
        result = _run(args.model, args.only, runs=args.runs, concurrency=args.concurrency, limit=limit)
    except NighthawkError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(report_text(result, show_steps=args.show_steps))
    if args.json:
        result.save(args.json)
        print(f"\nwritten to {args.json}")
    return 0


def _executor(model: str) -> AgentStepExecutor:
    """The executor for `--model`, its model built once here, before any check runs: a string without a
    provider, a missing key, an unknown provider or model fails now, not in every check.

    Raises:
        ModelConfigurationError: The model cannot be used as given.
    """
    from .. import AgentStepExecutor, StepExecutorConfiguration
    from ..configuration import check_model
    from ..errors import ModelConfigurationError
    from ..model._provider_models import build_model

    try:
        check_model(model, "--model")
    except ValueError as exc:
        raise ModelConfigurationError(str(exc)) from None
    build_model(model, None)  # thrown away: the executor builds its own, with its retry setting
    return AgentStepExecutor.from_configuration(configuration=StepExecutorConfiguration(model=model))


def _run(
    model: str, only: Sequence[str] | None, *, runs: int, concurrency: int, limit: UsageBudget | None
) -> SuiteResult:
    from .. import run
    from .runner import run_suite

    with run(_executor(model)):
        return run_suite(only, runs=runs, concurrency=concurrency, limit=limit, model=model, progress=None)
