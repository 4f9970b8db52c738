"""Time a locals summary with small values against one with a huge value added.

Run with `PYTHONPATH=core python bench/bench_context.py`. Prints, per case, the median time over several
runs, its ratio to the small-values case and the summary length; the ratios should stay near 1 because
rendering reads only what the budget can show.
"""

from __future__ import annotations

import statistics
import time

from nighthawk.prompting._tokens import estimate_tokens
from nighthawk.configuration import StepContextLimits
from nighthawk.prompting._summaries import render_locals_summary
from nighthawk.secrets import ContextRedaction

RUNS = 15


class EstimateCounter:
    """The offline estimate, so the bench measures rendering, not tiktoken."""

    name = "estimate"

    def count(self, text: str) -> int:
        return estimate_tokens(text)


def small_locals() -> dict[str, object]:
    return {"count": 3, "name": "report", "ratio": 0.25, "tags": ["a", "b"], "options": {"verbose": True}}


def median_seconds(step_locals: dict[str, object]) -> tuple[float, int]:
    options = {
        "limits": StepContextLimits(),
        "style": "default",
        "counter": EstimateCounter(),
        "redaction": ContextRedaction(),
    }
    times = []
    summary = ""
    for _ in range(RUNS):
        start = time.perf_counter()
        summary = render_locals_summary(step_locals, **options)  # type: ignore[arg-type]
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(summary)


def main() -> None:
    cases = {
        "small values": {},
        "+ list of 10**6": {"big": list(range(10**6))},
        "+ list of 10**7": {"big": list(range(10**7))},
        "+ dict of 10**5 keys": {"big": {f"k{i}": i for i in range(10**5)}},
        "+ str of 100 MB": {"big": "x" * 100_000_000},
        "+ bytes of 100 MB": {"big": b"\0" * 100_000_000},
    }
    results = {label: median_seconds({**small_locals(), **extra}) for label, extra in cases.items()}
    base = results["small values"][0]
    print(f"{'case':<24}{'median ms':>12}{'ratio':>10}{'chars':>10}")
    for label, (seconds, length) in results.items():
        print(f"{label:<24}{seconds * 1000:>12.3f}{seconds / base:>10.2f}{length:>10}")


if __name__ == "__main__":
    main()
