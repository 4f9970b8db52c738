"""Display objects filled from events: one step (`StepView`) and all the steps one cell started (`CellView`).

`StepView` keeps what the event stream said about one execution of a Natural block (and the steps nested in
it). `CellView` gathers the top-level steps a single cell started (one `%%natural` block, or a natural
function called 300 times from a loop or `df.apply`) into one display. Both give deterministic `text/plain`
and `text/html` from `_repr_mimebundle_` (no ids, no addresses; durations appear only in the HTML, inside
`<span class="nh-duration">` so an nbval sanitizer can blank them), and never a widget view: the live
widget is a separate, temporary output (see `_live`), so what stays in a notebook renders with no kernel.

The size of a cell's display does not grow with the number of steps: beyond a few, only the first ones,
the last ones and the ones that did not complete are shown in full, and the rest are counted. Event payloads
are already bounded, masked previews, so nothing here needs to mask again; characters that would redraw,
reorder or hide text (a model may write them) are shown as `<U+XXXX>` in both forms. What a step's events
said is kept by `_records.StepRecord`, which `StepView` extends; the text and the HTML are built by `_text`
and `_html`, which read records and never import this module.
"""

from __future__ import annotations

import threading
from typing import Any

from nighthawk import events
from nighthawk.transcript._unseen import visible_controls

from ._html import CSS, cell_html, live_html, step_html
from ._records import StepRecord
from ._text import cell_lines, step_lines

__all__ = ["CellView", "StepView"]

class StepView(StepRecord):
    """One step (and its nested steps) as a display object.

    Feed it events with `apply`; display it with IPython's `display`. Until the step finishes the view shows
    `running`.
    """

    def __init__(self, started: events.StepStarted, *, mode: str = "html") -> None:
        super().__init__(started)
        self.mode = mode
        """Display mode: `widget`, `html`, `text` or `none` (see `NighthawkSettings.display`)."""

    def __repr__(self) -> str:  # cheap on purpose: no rendering
        return f"<StepView {self.step_id} {self.status}>"

    # --- static forms ------------------------------------------------------------------------------

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return _bundle(self.mode, self.text, self.html)

    def text(self) -> str:
        """Deterministic plain text of the current state (no durations)."""
        with self._lock:
            return visible_controls("\n".join(step_lines(self, indent="")))

    def html(self) -> str:
        """Deterministic HTML of the current state; durations sit in `<span class="nh-duration">`."""
        with self._lock:
            return CSS + step_html(self)


class CellView:
    """Every top-level step one cell started, shown as one display.

    One step is shown exactly like its `StepView`. Several steps get a summary (how many completed,
    raised, failed or are still running; requests, tokens, time), the programs they ran, and the steps
    chosen by `shown_indices` in full, each folded under a one-line summary.
    """

    def __init__(self, *, mode: str) -> None:
        self.mode = mode
        """Display mode of the whole cell, fixed when its first step started."""
        self.steps: list[StepView] = []
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<CellView {len(self.steps)} steps>"

    def add(self, view: StepView) -> None:
        with self._lock:
            self.steps.append(view)

    def snapshot(self) -> list[StepView]:
        """The steps so far (a copy: events may add steps from the runner's thread)."""
        with self._lock:
            return list(self.steps)

    @property
    def running(self) -> int:
        return sum(1 for view in self.snapshot() if not view.finished)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return _bundle(self.mode, self.text, self.html)

    def text(self) -> str:
        """Deterministic plain text: the step itself, or a bounded summary of many."""
        return visible_controls("\n".join(cell_lines(self.snapshot())))

    def html(self) -> str:
        """Deterministic HTML: the step itself, or a bounded summary of many."""
        return CSS + cell_html(self.snapshot())

    def live_html(self) -> str:
        """HTML for the live widget: the summary, the running steps in full and the latest finished one."""
        return CSS + live_html(self.snapshot())


def _bundle(mode: str, text: Any, page: Any) -> dict[str, Any]:
    """The static mime bundle of a display in `mode` (never a widget view: it must outlive the kernel)."""
    if mode == "none":
        return {}
    bundle: dict[str, Any] = {"text/plain": text()}
    if mode in ("widget", "html"):
        bundle["text/html"] = page()
    return bundle
