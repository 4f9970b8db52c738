"""The kernel-wide event listener that turns the steps of each cell into one display.

One `StepDisplayer` is registered as a process listener while the extension is loaded, so steps are shown
the same way whichever door started them: a `%%natural` cell, or a natural function called from a plain
cell (once, or 300 times from a loop or `df.apply`). Every top-level step a cell starts joins that cell's
`CellView`; a step started from inside another step is attached to its parent's view.

How a cell's steps reach the notebook, given that nbval compares the *first* message of every output and
ignores `update_display_data` and `clear_output`, while nbclient saves the *last* update:

1. in `widget` mode with a live kernel, one `StepWidget` is displayed when the cell's first step starts, as
   an output holding *only* the widget-view mime type (nbval skips that type), and re-rendered at most a few
   times a second while the steps run;
2. when the cell ends (`post_run_cell`, or the `%%natural` magic before it returns or raises), that output
   is updated to the view of a closed widget (model id `""`, which JupyterLab hides and records itself when
   a widget closes; nbval skips it too), the widget is closed, and the `CellView` is displayed once with
   deterministic `text/plain` and `text/html` and no widget view.

So the saved and compared output is the final static one, it renders with no kernel and no network
(nbconvert with or without stored widget state, GitHub, VS Code, a terminal), and a live frontend sees the
steps as they run. In `html` and `text` mode only step 2's display happens; in `none` mode nothing is
displayed, but the cell's steps are still kept (no widget, no rendering) for `%nighthawk code`. Events
arrive on the runner's background thread or on the block's calling thread; IPython's display publisher and
widget comms are safe to use from either.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from nighthawk import events
    from ._display import CellView, StepView
    from ._records import StepHistory, StepRecord
    from ._widgets import LiveWidget

__all__ = ["StepDisplayer", "display_mode_override"]

_mode_override: ContextVar[str | None] = ContextVar("nighthawk_ipython_display_mode", default=None)

LIVE_INTERVAL_S = 0.25
"""Shortest time between two renders of the live widget: its cost stays flat however fast steps run."""


@contextmanager
def display_mode_override(mode: str | None) -> Iterator[None]:
    """Show steps started inside the `with` block in `mode` (`None` keeps the kernel setting)."""
    token = _mode_override.set(mode)
    try:
        yield
    finally:
        _mode_override.reset(token)


def _comms_live() -> bool:
    """Whether a kernel that can talk to widget models is running this code."""
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


class StepDisplayer:
    """Process-wide event listener: one `CellView` per cell, displayed once when the cell ends.

    Args:
        default_mode: Returns the kernel's display mode (read when a cell's first step starts, so
            `%nighthawk display` applies from the next cell on).
        display: IPython's `display` function; tests may pass their own.
        shell: The shell whose `post_run_cell` ends a cell; the running one by default. Without any shell,
            a cell's display is shown as soon as none of its steps runs.
    """

    def __init__(
        self, default_mode: Callable[[], str], display: Callable[..., Any] | None = None, shell: Any = None
    ) -> None:
        self._default_mode = default_mode
        self._display = display
        self._shell = shell
        self._views: dict[str, StepView] = {}
        self._parents: dict[str, StepView] = {}
        self._cell: CellView | None = None
        self._live: LiveWidget | None = None
        self._hooked: Any = None
        self._muted = 0
        self._lock = threading.RLock()
        self.last_view: CellView | None = None
        """The most recently displayed cell (for tests and `%nighthawk status`)."""
        self._cell_count: int | None = None
        """The execution count of the open cell (its `In[n]`), to file its steps under."""
        self.history: StepHistory | None = None
        """The latest steps of past cells, for `%nighthawk code` (made with the first cell that ran one)."""
        self.map_ran_last = False
        """Whether a map started after the last kept step finished: its items' steps are not kept, so the
        last step kept is not the last that ran (`%nighthawk code` says so rather than give it as the last)."""

    @property
    def active(self) -> bool:
        """Skip building events entirely when nothing would be displayed or kept: in display mode `none` the
        steps are still recorded (for `%nighthawk code`), except while a map runs (it keeps none of its own)."""
        return self._cell is not None or self._mode() != "none" or not self._muted

    def _mode(self) -> str:
        return _mode_override.get() or self._default_mode()

    def mute(self, muted: bool) -> None:
        """Stop (`True`) or resume (`False`) showing new top-level steps; calls nest. A map shows its own
        display, and 1,000 items must not add 1,000 steps to the cell's."""
        with self._lock:
            self._muted += 1 if muted else -1
            self.map_ran_last = self.map_ran_last or muted

    def _show(self, obj: Any, **kwargs: Any) -> Any:
        display = self._display
        if display is None:
            from IPython.display import display
        return display(obj, **kwargs)

    # --- events ------------------------------------------------------------------------------------

    def __call__(self, event: events.Event) -> None:
        from nighthawk import events  # not at the top: `%load_ext` starts this listener before any event class exists

        invocation_id = getattr(event, "invocation_id", None)
        if invocation_id is None:
            return  # run and scope events do not belong to a step
        if isinstance(event, events.StepStarted):
            self._start(event)
            return
        with self._lock:
            view = self._views.get(invocation_id)
        if view is None:
            return
        changed = view.apply(event)
        if isinstance(event, events.StepFinished):
            with self._lock:
                self._views.pop(invocation_id, None)
                if self._parents.pop(invocation_id, None) is None:  # a top-level step, kept: the last now
                    self.map_ran_last = False
                cell = self._cell
            if self._hooked is None and cell is not None and cell.running == 0:
                self.flush()  # no shell tells us when the cell ends: show it when nothing runs
                return
        if changed:
            self._refresh()

    def _start(self, event: events.StepStarted) -> None:
        # Here, not at the top: the views and their HTML and text renderers wait for the first step, so
        # `%load_ext` (which starts this listener) does not import them.
        from ._display import StepView

        with self._lock:
            parent = self._views.get(event.parent_invocation_id) if event.parent_invocation_id else None
            if parent is not None:
                view = StepView(event, mode=parent.mode)
                self._views[event.invocation_id] = view
                self._parents[event.invocation_id] = parent
                parent.add_child(view)
            else:
                if self._muted:
                    return  # a map runs: its own display shows it (`_mapview`)
                cell = self._cell
                if cell is None:
                    cell = self._open_cell(self._mode())
                view = StepView(event, mode=cell.mode)
                self._views[event.invocation_id] = view
                cell.add(view)
        self._refresh()

    def _open_cell(self, mode: str) -> CellView:
        """Start collecting a cell's steps; show the live widget and hook the end of the cell."""
        from ._display import CellView  # here for the reason given in `_start`

        cell = self._cell = CellView(mode=mode)
        shell = self._shell
        if shell is None:
            from IPython import get_ipython

            shell = get_ipython()
        # IPython counts a running cell before it runs (as `%%natural` does for its step id, `In[n]`).
        count = getattr(shell, "execution_count", None)
        self._cell_count = max(count - 1, 1) if isinstance(count, int) else None
        if shell is not None and self._hooked is None:
            shell.events.register("post_run_cell", self._cell_finished)
            self._hooked = shell
        if mode == "widget" and _comms_live():
            from ._widgets import WIDGET_MIME, LiveWidget, StepWidget  # imports ipywidgets: only for a live widget

            widget = StepWidget.live()
            handle = self._show({WIDGET_MIME: widget.view_data()}, raw=True, display_id=True)
            self._live = LiveWidget(widget=widget, handle=handle)
        return cell

    # --- the live widget ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Re-render the live widget now, or once the throttle interval has passed."""
        with self._lock:
            live = self._live
            if live is None or live.timer is not None:
                return
            wait = live.sent_at + LIVE_INTERVAL_S - time.monotonic()
            if wait > 0:
                live.timer = threading.Timer(wait, self._render, args=(live,))
                live.timer.daemon = True
                live.timer.start()
                return
        self._render(live)

    def _render(self, live: LiveWidget) -> None:
        with self._lock:
            live.timer = None
            cell = self._cell
            if self._live is not live or cell is None:
                return  # the cell ended meanwhile
            live.sent_at = time.monotonic()
            page = cell.live_html()
            status = "running" if cell.running else "completed"
        live.widget.show(page, status)

    # --- the end of a cell -------------------------------------------------------------------------

    def _cell_finished(self, result: Any = None) -> None:
        """IPython `post_run_cell` hook."""
        self.flush()

    def flush(self) -> None:
        """End the current cell: retire its live widget and display its steps once (idempotent)."""
        with self._lock:
            cell, live, hooked, count = self._cell, self._live, self._hooked, self._cell_count
            self._cell = self._live = self._hooked = None
            if live is not None and live.timer is not None:
                live.timer.cancel()
        if hooked is not None and self._cell_finished in hooked.events.callbacks["post_run_cell"]:
            hooked.events.unregister("post_run_cell", self._cell_finished)
        if cell is None:
            return
        if live is not None:
            from ._widgets import CLOSED_VIEW, WIDGET_MIME  # imported already: a live widget was shown

            live.handle.update({WIDGET_MIME: CLOSED_VIEW}, raw=True)
            live.widget.retire()
        if self.history is None:
            from ._records import StepHistory  # loaded with the cell's views already: a lookup

            self.history = StepHistory()
        self.history.add(count, cell.snapshot())
        if cell.mode == "none":  # kept for `%nighthawk code`, never shown
            return
        self.last_view = cell
        if cell.snapshot():
            self._show(cell)

    def find_step(self, key: str | None) -> StepRecord | None:
        """A finished step: the last top-level one (`key` is `None`), the last of the cell with execution
        count `key`, or the last with step id `key` (nested steps too); the running cell's steps count too."""
        with self._lock:
            cell, count = self._cell, self._cell_count
        if cell is not None:
            from ._records import with_nested  # a cell is open: its views loaded the records already

            steps = [step for step in cell.snapshot() if step.finished]
            if key is not None and key != str(count):
                steps = [step for step in with_nested(steps) if step.step_id == key]
            if steps:
                return steps[-1]
        return None if self.history is None else self.history.find(key)

    def known_steps(self) -> tuple[list[int], list[str]]:
        """Every key `find_step` answers, as `StepHistory.known` lists them, the running cell's included."""
        cells, ids = ([], []) if self.history is None else self.history.known()
        with self._lock:
            cell, count = self._cell, self._cell_count
        steps = [] if cell is None else [step for step in cell.snapshot() if step.finished]
        if steps and count is not None:
            from ._records import with_nested  # a cell is open: its views loaded the records already

            cells = [*(known for known in cells if known != count), count]
            found = {step.step_id: step for step in with_nested(steps)}  # the last of each id, as `find_step` does
            ids = [*ids, *(key for key, step in found.items() if step is not steps[-1])]
        return cells, list(dict.fromkeys(ids))
