"""Eval results as people read them: a text report, a side-by-side comparison, and both for notebooks.

`Report` and `Comparison` carry `_repr_mimebundle_` (plain text and HTML with a bar chart drawn in HTML),
so a notebook shows them without this module importing IPython or a plotting library.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from .results import ProgramResult, StepCall, SuiteResult

__all__ = ["Comparison", "Report", "compare", "compare_text", "report", "report_text"]

_BAR_WIDTH = 20


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.2f}"


def _cost(cost: float | None) -> str:
    return "n/a" if cost is None else f"${cost:.4f}"


def _held(program: ProgramResult | SuiteResult) -> str:
    checks = program.checks
    ran = [check for check in checks if check.status != "not run"]
    held = sum(check.status == "passed" for check in ran)
    return f"{held}/{len(ran)}" + (f" ({len(checks) - len(ran)} not run)" if len(ran) < len(checks) else "")


def _bar(rate: float | None) -> str:
    filled = round((rate or 0.0) * _BAR_WIDTH)
    return "█" * filled + "·" * (_BAR_WIDTH - filled)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _figures(result: ProgramResult | SuiteResult) -> list[str]:
    return [
        _rate(result.pass_rate), _held(result), str(result.requests), str(result.input_tokens),
        str(result.output_tokens), _cost(result.cost_usd),
    ]


def _step_text(step: StepCall) -> str:
    if step.tool == "text":  # a response without a tool call: what the model wrote instead
        return f"(answered without a tool call) {step.result!r}"
    return f"{step.tool}({step.arguments})" + (f" -> {step.result}" if step.result else "")


_HEADER = ("program", "pass rate", "checks held", "requests", "input tok", "output tok", "cost")


def report_text(result: SuiteResult, *, show_steps: bool = False) -> str:
    """The per-program table, the overall line and every failed check (with its steps if `show_steps`)."""
    rows = [[program.name, *_figures(program), f"{program.wall_time_s:.1f} s"] for program in result.programs]
    rows.append(["overall", *_figures(result), f"{result.wall_time_s:.1f} s"])
    lines = [
        f"nighthawk eval: {result.model}, {result.runs} run(s) of {len(result.programs)} program(s)",
        "",
        _table((*_HEADER, "time"), rows),
    ]
    if result.stopped:
        lines += ["", f"stopped early: {result.stopped}"]
    failed = [check for check in result.checks if check.status == "failed"]
    if failed:
        lines += ["", "failed checks:"]
    for check in failed:
        lines.append(f"- {check.program}.{check.check} (run {check.run + 1}):")
        lines += [f"    {line}" for line in check.failure.splitlines()]
        if show_steps:
            lines += [f"      {_step_text(step)}" for step in check.steps]
            if not check.steps:
                lines.append("      (no tool calls)")
    if failed and not show_steps:
        lines += ["", "(`--show-steps` lists each failed check's tool calls)"]
    return "\n".join(lines)


def compare_text(a: SuiteResult, b: SuiteResult) -> str:
    """Two runs side by side: each program's pass rate in both, the difference, and the overall figures."""
    by_name = {program.name: program for program in b.programs}
    names = [program.name for program in a.programs] + [n for n in by_name if n not in {p.name for p in a.programs}]
    a_by_name = {program.name: program for program in a.programs}
    rows = []
    for name in names:
        left, right = a_by_name.get(name), by_name.get(name)
        rate_a = left.pass_rate if left else None
        rate_b = right.pass_rate if right else None
        delta = "" if rate_a is None or rate_b is None else f"{rate_b - rate_a:+.2f}"
        rows.append([name, _rate(rate_a), _bar(rate_a), _rate(rate_b), _bar(rate_b), delta])
    rows.append(["overall", _rate(a.pass_rate), _bar(a.pass_rate), _rate(b.pass_rate), _bar(b.pass_rate),
                 "" if a.pass_rate is None or b.pass_rate is None else f"{b.pass_rate - a.pass_rate:+.2f}"])
    totals = [
        ["requests", str(a.requests), str(b.requests)],
        ["input tokens", str(a.input_tokens), str(b.input_tokens)],
        ["output tokens", str(a.output_tokens), str(b.output_tokens)],
        ["cost", _cost(a.cost_usd), _cost(b.cost_usd)],
        ["wall time", f"{a.wall_time_s:.1f} s", f"{b.wall_time_s:.1f} s"],
    ]
    return "\n".join([
        f"A: {a.model} ({a.runs} run(s))    B: {b.model} ({b.runs} run(s))",
        "",
        _table(("program", "A", "", "B", "", "B - A"), rows),
        "",
        _table(("", "A", "B"), totals),
    ])


def _html_bar(rate: float | None, colour: str) -> str:
    width = round((rate or 0.0) * 100)
    return (
        f'<div style="background:#eee;width:120px;height:0.8em;display:inline-block">'
        f'<div style="background:{colour};width:{width}%;height:100%"></div></div> {_rate(rate)}'
    )


_A_COLOUR, _B_COLOUR = "#4c72b0", "#dd8452"


@dataclass(frozen=True)
class Report:
    """One run, shown as a table with a pass-rate bar per program."""

    result: SuiteResult

    def __repr__(self) -> str:
        return report_text(self.result)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        result = self.result
        rows = "".join(
            f"<tr><td>{html.escape(p.name)}</td><td>{_html_bar(p.pass_rate, _A_COLOUR)}</td><td>{_held(p)}</td>"
            f"<td>{p.requests}</td><td>{p.input_tokens}</td><td>{p.output_tokens}</td><td>{_cost(p.cost_usd)}</td></tr>"
            for p in result.programs
        )
        body = (
            f"<p><b>nighthawk eval</b>: {html.escape(result.model)}, pass rate {_rate(result.pass_rate)}</p>"
            f"<table><tr>{''.join(f'<th>{h}</th>' for h in _HEADER)}</tr>{rows}</table>"
        )
        return {"text/plain": report_text(result), "text/html": body}


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side, shown as a table with paired pass-rate bars per program."""

    a: SuiteResult
    b: SuiteResult

    def __repr__(self) -> str:
        return compare_text(self.a, self.b)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        a_by_name = {p.name: p for p in self.a.programs}
        b_by_name = {p.name: p for p in self.b.programs}
        names = list(dict.fromkeys([*a_by_name, *b_by_name]))

        def rate(results: dict[str, ProgramResult], name: str) -> float | None:
            program = results.get(name)
            return program.pass_rate if program else None

        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{_html_bar(rate(a_by_name, name), _A_COLOUR)}</td>"
            f"<td>{_html_bar(rate(b_by_name, name), _B_COLOUR)}</td></tr>"
            for name in names
        )
        overall = (
            f"<tr><th>overall</th><th>{_html_bar(self.a.pass_rate, _A_COLOUR)}</th>"
            f"<th>{_html_bar(self.b.pass_rate, _B_COLOUR)}</th></tr>"
        )
        body = (
            f"<table><tr><th>program</th><th>A: {html.escape(self.a.model)}</th><th>B: {html.escape(self.b.model)}</th></tr>"
            f"{rows}{overall}</table>"
            f"<p>requests {self.a.requests} / {self.b.requests}, cost {_cost(self.a.cost_usd)} / {_cost(self.b.cost_usd)}</p>"
        )
        return {"text/plain": compare_text(self.a, self.b), "text/html": body}


def report(result: SuiteResult) -> Report:
    """`result` as a display: text in a terminal, a table with bars in a notebook."""
    return Report(result)


def compare(a: SuiteResult, b: SuiteResult) -> Comparison:
    """Two results side by side: text in a terminal, a table with paired bars in a notebook."""
    return Comparison(a, b)
