"""What an eval run measured: per check, per program and overall; saved to JSON and read back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

__all__ = ["CheckResult", "ProgramResult", "StepCall", "SuiteResult", "load_result"]

FORMAT = 1
"""Version of the JSON layout, so a later layout can still read (or refuse) older files."""


@dataclass(frozen=True, kw_only=True)
class StepCall:
    """One tool call, the outcome, or a response without a tool call, of a step the check ran (shown with
    `--show-steps`)."""

    tool: str
    """`nh_eval`, `nh_assign`, a user tool, `outcome`, or `text` (the model answered without a tool call)."""
    arguments: str
    """The call's arguments as the model sent them (for an outcome: its kind and expression or message)."""
    result: str
    """What the call returned, or its error; for an outcome, the value returned or the exception raised; for
    `text`, what the model wrote (clipped)."""


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """One run of one check."""

    program: str
    check: str
    run: int
    """0-based run number (`--runs N` runs every check N times)."""
    status: Literal["passed", "failed", "not run"]
    """`not run` when the budget ran out before the check started or while it ran."""
    failure: str = ""
    """Why it failed: the assertion line, or the exception that ended the program."""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """`None` when unknown: some request had no known price (a local or scripted model), or none was sent."""
    wall_time_s: float = 0.0
    steps: tuple[StepCall, ...] = ()


class _Summed:
    """Requests, tokens and cost summed over parts: the checks of a program, the programs of a run."""

    def _parts(self) -> Sequence[CheckResult | ProgramResult]:
        raise NotImplementedError

    @property
    def requests(self) -> int:
        return sum(part.requests for part in self._parts())

    @property
    def input_tokens(self) -> int:
        return sum(part.input_tokens for part in self._parts())

    @property
    def output_tokens(self) -> int:
        return sum(part.output_tokens for part in self._parts())

    @property
    def cost_usd(self) -> float | None:
        """`None` when unknown: some request had no known price, or no request was sent (never a made-up 0)."""
        # A part that sent nothing adds nothing; it does not make the others' cost unknown.
        costs = [part.cost_usd for part in self._parts() if part.requests]
        return None if not costs or None in costs else sum(costs)  # type: ignore[arg-type]


@dataclass(frozen=True, kw_only=True)
class ProgramResult(_Summed):
    """Every check run of one program."""

    name: str
    checks: tuple[CheckResult, ...]

    def _parts(self) -> Sequence[CheckResult]:
        return self.checks

    @property
    def ran(self) -> tuple[CheckResult, ...]:
        return tuple(check for check in self.checks if check.status != "not run")

    @property
    def pass_rate(self) -> float | None:
        """Share of the checks run that held (`None` when none ran)."""
        ran = self.ran
        return sum(check.status == "passed" for check in ran) / len(ran) if ran else None

    @property
    def wall_time_s(self) -> float:
        """Summed over the checks (they may have overlapped)."""
        return sum(check.wall_time_s for check in self.checks)


@dataclass(frozen=True, kw_only=True)
class SuiteResult(_Summed):
    """A whole eval run."""

    model: str
    """The model as named on the command line (or the executor's label)."""
    runs: int
    programs: tuple[ProgramResult, ...]
    wall_time_s: float
    """From the first check started to the last one ended."""
    stopped: str = ""
    """Why the run stopped early (a budget), or empty."""
    version: str = field(default="")
    """The nighthawk version that ran it."""

    @property
    def pass_rate(self) -> float | None:
        """The mean of the programs' pass rates (as the Nightjar paper averages), over programs that ran."""
        rates = [rate for program in self.programs if (rate := program.pass_rate) is not None]
        return fmean(rates) if rates else None

    @property
    def checks(self) -> tuple[CheckResult, ...]:
        return tuple(check for program in self.programs for check in program.checks)

    def _parts(self) -> Sequence[ProgramResult]:
        return self.programs

    def to_json(self) -> str:
        """The result as JSON text (read back with `load_result`)."""
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=1)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")


def load_result(path: str | Path) -> SuiteResult:
    """Read a result saved with `--json` (or `SuiteResult.save`).

    Raises:
        ValueError: The file is not an eval result of a layout this version reads.
    """
    try:
        data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{str(path)!r} is not JSON ({exc}); give a file written by `nighthawk eval --json`") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(
            f"{str(path)!r} is not an eval result of format {FORMAT}; give a file written by `nighthawk eval --json`"
        )
    programs = tuple(
        ProgramResult(
            name=program["name"],
            checks=tuple(
                CheckResult(**{**check, "steps": tuple(StepCall(**step) for step in check["steps"])})
                for check in program["checks"]
            ),
        )
        for program in data["programs"]
    )
    return SuiteResult(
        model=data["model"], runs=data["runs"], programs=programs, wall_time_s=data["wall_time_s"],
        stopped=data.get("stopped", ""), version=data.get("version", ""),
    )
