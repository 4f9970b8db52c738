"""One line on stderr that tells how far a map is: done/total, failed, items/s, tokens, cost, ETA.

Redrawn in place (`\\r`) at most ten times a second, and once more when the map ends, then left as the
summary. tqdm would do, but it would be a dependency for one line; the figures here are the map's own.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ..budget import UsageTotals

__all__ = ["LineProgress", "wanted"]

_INTERVAL_S = 0.1


def wanted(progress: bool | None, stream: TextIO) -> bool:
    """`progress` as given; by default on where someone watches: a terminal or a Jupyter kernel."""
    if progress is not None:
        return progress
    if type(stream).__module__.startswith("ipykernel"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class LineProgress:
    """The progress line of one map."""

    def __init__(self, total: int | None, usage: UsageTotals, stream: TextIO | None = None) -> None:
        self.total = total
        self.usage = usage
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.failed = 0
        self.kept = 0
        self._started = time.monotonic()
        self._drawn = 0.0
        self._width = 0

    def kept_item(self) -> None:
        """An item answered from a store (counts as done, not in the rate)."""
        self.kept += 1
        self.done += 1
        self._draw(final=False)

    def finished_item(self) -> None:
        self.done += 1
        self._draw(final=False)

    def failed_item(self) -> None:
        self.failed += 1
        self._draw(final=False)

    def close(self) -> None:
        self._draw(final=True)
        self.stream.write("\n")
        self.stream.flush()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        ran = self.done - self.kept
        rate = ran / elapsed
        of = f"/{self.total}" if self.total is not None else ""
        parts = [f"nighthawk.map {self.done}{of}"]
        if self.kept:
            parts.append(f"{self.kept} kept")
        parts.append(f"{self.failed} failed")
        parts.append(f"{rate:.1f} items/s")
        parts.append(f"{self.usage.total_tokens:,} tokens")
        if self.usage.unpriced_requests and not self.usage.cost_usd:
            parts.append("cost unknown")  # no price for this model
        else:
            parts.append(f"${self.usage.cost_usd:.4f}" + ("+" if self.usage.unpriced_requests else ""))
        left = None if self.total is None else self.total - self.done - self.failed
        if left and rate > 0:
            parts.append(f"ETA {_clock(left / rate)}")
        else:
            parts.append(f"{_clock(elapsed)} elapsed")
        return " | ".join(parts)

    def _draw(self, *, final: bool) -> None:
        now = time.monotonic()
        if not final and now - self._drawn < _INTERVAL_S:
            return
        self._drawn = now
        text = self.line()
        padding = " " * max(self._width - len(text), 0)  # wipe what a longer previous line left
        self._width = len(text)
        self.stream.write(f"\r{text}{padding}")
        self.stream.flush()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
