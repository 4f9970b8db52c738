"""Time what secret scrubbing adds to a step: looking into values for secrets, and scrubbing text.

Run with `PYTHONPATH=core python bench/bench_secrets.py`. Prints the median over several runs of looking
into values of growing size for secret values (what a step does with the values an expression names; the
look is bounded, so the large ones should cost about the same as a moderate one), and of scrubbing
tool-result-sized and prompt-sized text with few and many secret values met (each value is masked with its
derived forms, so many values cost more than before). `bench_unrelated_data.py` shows that data a block
never reads costs nothing.
"""

from __future__ import annotations

import random
import statistics
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nighthawk import ContextRedaction

try:
    from nighthawk.secrets._scrubber import SecretScrubber, collect_secret_values
except ImportError:  # a version from before the secrets package, to compare with
    from nighthawk._secrets import SecretScrubber, collect_secret_values  # type: ignore[no-redef]

RUNS = 15
REDACTION = ContextRedaction()
REPLAYS = Path(__file__).resolve().parent.parent / "notebooks" / "replays"


@dataclass
class Row:
    name: str
    note: str


def median_ms(action: Callable[[], object]) -> float:
    timings = []
    for _ in range(RUNS):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1e3


def scopes() -> dict[str, list[tuple[str | None, object]]]:
    small: list[tuple[str | None, object]] = [
        ("db_password", "hunter2-blue-42"),
        ("conn", {"host": "db", "password": "Tr0ub4dor&3x"}),
        ("threshold", 3),
        ("data", list(range(100))),
    ]
    return {
        "4 names": small,
        "200 names of nested records (~13k values)": small
        + [(f"v{i}", {"a": i, "text": f"text {i} " * 5, "rows": [Row(f"n{j}", "a note") for j in range(20)]}) for i in range(200)],
        "a list of 1,000,000 dicts": small + [("rows", [{"id": i, "name": f"row {i}"} for i in range(1_000_000)])],
        "500 cells of input history": small + [("In", ["x = 1\n" * 200] * 500)],
    }


def main() -> None:
    for label, roots in scopes().items():
        print(f"collect, {label}: {median_ms(lambda roots=roots: collect_secret_values(roots, REDACTION)):.2f} ms")
    rng = random.Random(7)
    many = frozenset("".join(rng.choices(string.ascii_letters + string.digits, k=14)) for _ in range(200))
    for count, values in (("2", frozenset({"hunter2-blue-42", "Tr0ub4dor&3x"})), ("200", many)):
        scrubber = SecretScrubber(values=values)
        for size in (10_000, 100_000):
            text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
            print(f"scrub {size:,} chars, {count} secret values: {median_ms(lambda s=scrubber, t=text: s.scrub(t)):.3f} ms")
    # Text as prompts are: code, `=`, URLs, "token" (the example notebooks' recorded requests, in 20,000-char
    # pieces), and prose full of what the connection-string, URL and `Authorization` rules look for.
    recorded = "".join(path.read_text(encoding="utf-8") for path in sorted(REPLAYS.glob("*.yaml")))
    pieces = [recorded[i : i + 20_000] for i in range(0, min(len(recorded), 200_000), 20_000)]
    scrubber = SecretScrubber()
    print(f"scrub the notebooks' requests, per 20,000 chars: {median_ms(lambda: [scrubber.scrub(p) for p in pieces]) / len(pieces):.3f} ms")
    prose = ("token count 512; see https://x.test/a?page=2&limit=5 and Bearer tokens; password must be set; " * 200)[:20_000]
    print(f"scrub 20,000 chars of prose with `=`, `?`, token, Bearer, password: {median_ms(lambda: scrubber.scrub(prose)):.3f} ms")


if __name__ == "__main__":
    main()
