"""A `nighthawk.map` in a notebook: one live display for the whole map, then one static summary.

The kernel state registers `map_renderer` with the core (`nighthawk.batch.progress.use_renderer`), so a map
run in the kernel is shown here instead of as a line on stderr. While it runs, the step displayer is muted:
a map of 1,000 items would otherwise add 1,000 steps to the cell's display. What a map shows follows the
same rules as a cell's steps (see `_live`): in `widget` mode with a live kernel, a `StepWidget` output holding
only the widget-view mime type (nbval skips it), re-rendered at most ten times a second as items end and
about once a second whatever they do (the elapsed time, how a batch map's batches stand), and at once when the
map says what it waits on from its own thread (preparing the batch client, before any tick); when the map ends
that output is emptied, the widget closed, and the summary displayed once as a plain output with
deterministic `text/plain` and `text/html`, which renders with no kernel. Rates and times are the only
figures that change between two runs; `notebooks/sanitize.cfg` blanks them.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nighthawk.batch.progress import MapTally
from nighthawk.budget import UsageTotals

__all__ = ["MapSummary", "MapView"]

LIVE_INTERVAL_S = 0.1
"""Shortest time between two renders of the live display."""

_FAILURE_CHARS = 100
"""A failed item's message is cut to this in the summary: the whole exception is in `result.errors`."""


@dataclass(frozen=True)
class MapSummary:
    """The static summary of one map."""

    text: str
    html: str
    mode: str = "html"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        if self.mode == "text":
            return {"text/plain": self.text}
        return {"text/plain": self.text, "text/html": self.html}


class MapView(MapTally):
    """The progress of one map in a notebook (a `nighthawk.batch.progress.ProgressRenderer`).

    Args:
        total: Items in the map, `None` for a generator.
        usage: The map's running usage totals.
        mode: The kernel's display mode (`widget`, `html` or `text`); `none` shows nothing (`progress=False`).
        show: IPython's `display`.
        live: Whether to show a live widget while the map runs.
        mute: Called with `True` when the map starts and `False` when it ends (the step displayer's).
    """

    def __init__(
        self, total: int | None, usage: UsageTotals, *, mode: str, show: Callable[..., Any], live: bool, mute: Callable[[bool], None]
    ) -> None:
        super().__init__(total, usage)
        self.mode = mode
        self._show = show
        self._mute = mute
        self._widget: Any = None
        self._handle: Any = None
        self._sent_at = 0.0
        self._thread = threading.get_ident()
        if live:
            from ._widgets import WIDGET_MIME, StepWidget  # imports ipywidgets: only for a live widget

            self._widget = StepWidget.live()
            self._handle = show({WIDGET_MIME: self._widget.view_data()}, raw=True, display_id=True)
            self._render()
        mute(True)

    def kept_item(self) -> None:
        super().kept_item()
        self._refresh()

    def finished_item(self) -> None:
        super().finished_item()
        self._refresh()

    def failed_item(self, index: int, error: BaseException) -> None:
        super().failed_item(index, error)
        self._refresh()

    def shared_item(self, *, failed: bool) -> None:
        super().shared_item(failed=failed)
        self._refresh()

    def set_status(self, text: str) -> None:
        """Say what the map waits on: at once when said on the map's own thread (before its items start, it
        prepares the batch client for seconds without a tick), else at the next redraw there (`tick`)."""
        super().set_status(text)
        if self._widget is not None and threading.get_ident() == self._thread:
            self._render()

    def tick(self) -> None:
        """Redraw (the map ticks about once a second): the elapsed time, and a batch's state, which `set_status`
        stores from the background loop for the next redraw here, on the map's own thread."""
        self._refresh()

    def close(self) -> None:
        self._mute(False)
        if self._widget is not None:
            from ._widgets import CLOSED_VIEW, WIDGET_MIME

            self._handle.update({WIDGET_MIME: CLOSED_VIEW}, raw=True)
            self._widget.retire()
            self._widget = None
        if self.mode != "none":
            self._show(self.summary())

    def summary(self) -> MapSummary:
        """The figures as they stand, as a static display."""
        figures = self._figures(final=True)
        lines = ["nighthawk.map " + " | ".join(figures)]
        lines += [f"  item {index}: {_failure(error)}" for index, error in self.failures]
        if self.failed > len(self.failures):
            lines.append(f"  ... {self.failed - len(self.failures)} more in `result.errors`")
        return MapSummary("\n".join(lines), self._html(figures, final=True), self.mode)

    # --- rendering ---------------------------------------------------------------------------------

    def _figures(self, *, final: bool) -> list[str]:
        return self.parts(final=final, requests=True)

    def _html(self, figures: list[str], *, final: bool) -> str:
        status = "running" if not final else ("stopped" if self.stop is not None or self.left else "done")
        bar = (
            f'<progress value="{self.done + self.failed}" max="{self.total}" style="width:16em;vertical-align:middle">'
            "</progress> "
            if self.total
            else ""
        )
        failures = "".join(
            f"<li>item {index}: <code>{html.escape(_failure(error))}</code></li>" for index, error in self.failures
        )
        if self.failed > len(self.failures):
            failures += f"<li>... {self.failed - len(self.failures)} more in <code>result.errors</code></li>"
        listed = f'<ul style="margin:2px 0">{failures}</ul>' if failures else ""
        return (
            f'<div class="nh-map nh-{status}"><b>nighthawk.map</b> {status} {bar}'
            f"{html.escape(' · '.join(figures))}{listed}</div>"
        )

    def _refresh(self) -> None:
        if self._widget is not None and time.monotonic() - self._sent_at >= LIVE_INTERVAL_S:
            self._render()

    def _render(self) -> None:
        self._sent_at = time.monotonic()
        self._widget.show(self._html(self._figures(final=False), final=False), "running")


def _failure(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
    return text if len(text) <= _FAILURE_CHARS else text[: _FAILURE_CHARS - 3] + "..."
