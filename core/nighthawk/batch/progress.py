"""How far a map is: done/total, failed, items/s, tokens, cost, ETA; and who shows it.

`MapTally` counts and formats the figures. `LineProgress` draws them as one line on stderr, redrawn in place
(`\\r`) at most ten times a second, at least once a second (the map ticks it, from its start), and once more
when the map ends, then left as the summary. tqdm would do, but it would be a dependency for one line; the
figures here are the map's own.

A front end can show a map its own way (the kernel extension shows one live display per map in a notebook):
it registers a factory with `use_renderer` (kept in `nighthawk.road._map_renderers`, so registering one imports no
map machinery). The core knows nothing of it beyond the `ProgressRenderer`
protocol; a factory that returns `None` leaves the map to the stderr line.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from ..budget import UsageTotals
from ..road._map_renderers import ProgressRenderer, RendererFactory, registered_renderer, use_renderer

__all__ = ["LineProgress", "MapTally", "ProgressRenderer", "RendererFactory", "open_progress", "use_renderer", "wanted"]

_INTERVAL_S = 0.1


def open_progress(progress: bool | None, total: int | None, usage: UsageTotals) -> ProgressRenderer | None:
    """The renderer of a new map: the registered one if it takes the map, else the stderr line if wanted
    (`progress`: `True`, `False` or `None` for a terminal or a kernel)."""
    factory = registered_renderer()
    if factory is not None:
        shown = factory(total, usage, progress)
        if shown is not None:
            return shown
    return LineProgress(total, usage) if wanted(progress, sys.stderr) else None


def wanted(progress: bool | None, stream: TextIO) -> bool:
    """`progress` as given; by default on where someone watches: a terminal or a Jupyter kernel."""
    if progress is not None:
        return progress
    if type(stream).__module__.startswith("ipykernel"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class MapTally:
    """The counts of one map and the figures made from them (every renderer shows the same ones)."""

    def __init__(self, total: int | None, usage: UsageTotals) -> None:
        self.total = total
        self.usage = usage
        self.done = 0
        """Items with their answer: run, kept or shared."""
        self.failed = 0
        """Items that failed, each failure once (an equal item sharing it counts in `shared`)."""
        self.kept = 0
        self.shared = 0
        """Items answered by an equal item of the map."""
        self.shared_failures = 0
        self.stop: str | None = None
        """Why the map stopped before its end, once it did."""
        self.failures: list[tuple[int, BaseException]] = []
        """The first failed items, by position (a handful: a summary lists them, it does not log them)."""
        self.status = ""
        """What the map is waiting on, when something says (a batch map: how its provider batches stand)."""
        self.unbilled = 0
        """Lines of a batch map at the provider whose answers have not come back (their usage is not counted yet)."""
        self._started = time.monotonic()

    def kept_item(self) -> None:
        self.kept += 1
        self.done += 1

    def finished_item(self) -> None:
        self.done += 1

    def set_status(self, text: str) -> None:
        """Say what the map is waiting on; may come from any thread, and shows from the next draw on."""
        self.status = text

    def set_unbilled(self, lines: int) -> None:
        """Say how many lines of a batch map are at the provider, answers not back; may come from any thread."""
        self.unbilled = lines

    def failed_item(self, index: int, error: BaseException) -> None:
        self.failed += 1
        if len(self.failures) < 5:
            self.failures.append((index, error))

    def shared_item(self, *, failed: bool) -> None:
        self.shared += 1
        if failed:
            self.shared_failures += 1
        else:
            self.done += 1

    def stopped(self, reason: str) -> None:
        self.stop = reason

    @property
    def elapsed(self) -> float:
        return max(time.monotonic() - self._started, 1e-9)

    @property
    def rate(self) -> float:
        """Items run per second (items answered from a store or by an equal item took no time and do not count)."""
        return (self.done - self.kept - (self.shared - self.shared_failures)) / self.elapsed

    @property
    def left(self) -> int | None:
        return None if self.total is None else self.total - self.done - self.failed - self.shared_failures

    def done_text(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else str(self.done)

    def cost_text(self) -> str:
        """`$0.0123`; `cost unknown` when no request was priced (a model without a price, or every item
        answered without a request); a lower bound when only some were."""
        usage = self.usage
        if usage.cost_usd is not None:
            return f"${usage.cost_usd:.4f}"
        if usage.priced_cost_usd and usage.unpriced_requests < usage.requests:
            return f"${usage.priced_cost_usd:.4f}+ (cost unknown for {usage.unpriced_requests:,} requests)"
        return "cost unknown"

    def kept_cost_text(self) -> str:
        """` ($0.0090 when run)`: what the kept items cost in the run that made them (a map's usage says it),
        not spent again now; empty when unknown."""
        paid = getattr(self.usage, "kept_cost_usd", None)
        return f" (${paid:.4f} when run)" if paid is not None else ""

    def time_text(self, *, final: bool = False) -> str:
        """The ETA while items are left and a rate is known, else the time so far; at the end, the time taken
        and, when the map stopped, where and why. A map waiting on batches shows no ETA: its items end in
        bursts, when a batch does, and the provider decides when (one early item made it a day)."""
        left, rate = self.left, self.rate
        if final:
            ended = f"{clock(self.elapsed)} elapsed"
            if self.stop is not None:
                ended += f", {self.stop}" + (f", {left} left" if left else "")
            return ended
        if left and rate > 0 and not self.status:
            return f"ETA {clock(left / rate)}"
        return f"{clock(self.elapsed)} elapsed"

    def spent_parts(self, *, requests: bool = False) -> list[str]:
        """What the map spent (`requests`: with how many requests), and the batch lines not billed yet. While
        only such lines are out, they alone: "0 requests, $0.0000" would say that nothing is being spent."""
        usage = self.usage
        unbilled = f"{self.unbilled:,} line{'s' if self.unbilled != 1 else ''} submitted, not yet billed" if self.unbilled else ""
        if unbilled and not usage.requests:
            return [unbilled]
        parts = [f"{usage.requests:,} requests"] if requests else []
        parts += [
            f"{usage.total_tokens:,} tokens" + (f" ({usage.cache_read_tokens:,} cached)" if usage.cache_read_tokens else ""),
            self.cost_text(),
        ]
        return parts + ([unbilled] if unbilled else [])

    def parts(self, *, final: bool = False, requests: bool = False) -> list[str]:
        """The figures, in the order every renderer shows them (`final`: for the summary at the end; `requests`:
        with the requests counted)."""
        parts = [self.done_text()]
        if self.kept:
            parts.append(f"{self.kept} kept" + self.kept_cost_text())
        if self.shared:
            parts.append(f"{self.shared} answered by another item")
        if self.status:
            parts.append(self.status)
        return [*parts, f"{self.failed} failed", f"{self.rate:.1f} items/s", *self.spent_parts(requests=requests), self.time_text(final=final)]


class LineProgress(MapTally):
    """The progress line of one map."""

    def __init__(self, total: int | None, usage: UsageTotals, stream: TextIO | None = None) -> None:
        super().__init__(total, usage)
        self.stream = stream if stream is not None else sys.stderr
        self._drawn = 0.0
        self._width = 0
        self._lock = threading.Lock()  # `set_status` comes from another thread
        self._closed = False

    def kept_item(self) -> None:
        super().kept_item()
        self._draw(final=False)

    def finished_item(self) -> None:
        super().finished_item()
        self._draw(final=False)

    def failed_item(self, index: int, error: BaseException) -> None:
        super().failed_item(index, error)
        self._draw(final=False)

    def shared_item(self, *, failed: bool) -> None:
        super().shared_item(failed=failed)
        self._draw(final=False)

    def set_status(self, text: str) -> None:
        super().set_status(text)
        with self._lock:  # from another thread: never after the summary
            if not self._closed:
                self._draw(final=True)  # a batch's state changes seldom: show each change at once

    def tick(self) -> None:
        with self._lock:
            if not self._closed:
                self._draw(final=False)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._draw(final=True)
        self.stream.write("\n")
        self.stream.flush()

    def line(self, *, final: bool = False) -> str:
        return "nighthawk.map " + " | ".join(self.parts(final=final))

    def _draw(self, *, final: bool) -> None:
        now = time.monotonic()
        if not final and now - self._drawn < _INTERVAL_S:
            return
        self._drawn = now
        text = self.line(final=final)
        padding = " " * max(self._width - len(text), 0)  # wipe what a longer previous line left
        self._width = len(text)
        self.stream.write(f"\r{text}{padding}")
        self.stream.flush()


def clock(seconds: float) -> str:
    """`m:ss`, or `h:mm:ss` from an hour on."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
