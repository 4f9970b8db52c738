"""The kernel-wide event listener that turns every step into a display.

One `StepDisplayer` is registered as a process listener while the extension is loaded, so steps are shown
the same way whichever door started them: a `%%natural` cell, or a `@natural_function` called from a
plain cell. A step started from inside another step (its `parent_invocation_id` is known) is attached to
its parent's view instead of getting its own display.

How a top-level step reaches the notebook, given that nbval compares the *first* message of every output
and ignores both `update_display_data` and `clear_output`:

1. in `widget` mode with a live kernel, the widget is displayed at once as a bundle holding *only* the
   widget-view mime type (nbval skips that type, so this output compares as empty), and events update it
   through its comm while the block runs;
2. when the step finishes, that placeholder display is updated to an empty bundle (nbclient saves the
   update; nbval ignores it; either way the output compares as empty), and the final `StepView` is
   displayed once, with deterministic `text/plain` and `text/html` beside the same widget's view.

So the saved, compared output is always the final one, and a live frontend sees the widget throughout.
Events arrive on the runner's background thread; IPython's display publisher is safe to call from there
and the output lands in the running cell.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from nighthawk import events

from ._display import WIDGET_MIME, StepView, _comms_live

__all__ = ["StepDisplayer", "display_mode_override"]

_mode_override: ContextVar[str | None] = ContextVar("nighthawk_ipython_display_mode", default=None)


@contextmanager
def display_mode_override(mode: str | None) -> Iterator[None]:
    """Show steps started inside the `with` block in `mode` (`None` keeps the kernel setting)."""
    token = _mode_override.set(mode)
    try:
        yield
    finally:
        _mode_override.reset(token)


class StepDisplayer:
    """Process-wide event listener: one `StepView` per step, displayed when the step finishes.

    Args:
        default_mode: Returns the kernel's display mode (read at each step start, so `%nighthawk display`
            applies from the next step on).
        display: IPython's `display` function; tests may pass their own.
    """

    def __init__(self, default_mode: Callable[[], str], display: Callable[..., Any] | None = None) -> None:
        self._default_mode = default_mode
        self._display = display
        self._views: dict[str, StepView] = {}
        self._parents: dict[str, StepView] = {}
        self._handles: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.last_view: StepView | None = None
        """The most recent top-level view (for `%nighthawk status` and tests)."""

    @property
    def active(self) -> bool:
        """Skip building events entirely when nothing would be displayed."""
        return self._mode() != "none" or bool(self._views)

    def _mode(self) -> str:
        return _mode_override.get() or self._default_mode()

    def _show(self, obj: Any, **kwargs: Any) -> Any:
        display = self._display
        if display is None:
            from IPython.display import display
        return display(obj, **kwargs)

    def __call__(self, event: events.Event) -> None:
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
        view.apply(event)
        with self._lock:
            parent = self._parents.get(invocation_id)
        if parent is not None:
            parent.child_changed(view)
        if isinstance(event, events.StepFinished):
            with self._lock:
                self._views.pop(invocation_id, None)
                self._parents.pop(invocation_id, None)
                handle = self._handles.pop(invocation_id, None)
            if parent is None:
                self._finish(view, handle)

    def _start(self, event: events.StepStarted) -> None:
        with self._lock:
            parent = self._views.get(event.parent_invocation_id) if event.parent_invocation_id else None
        if parent is not None:
            view = StepView(event, mode=parent.mode)
            with self._lock:
                self._views[event.invocation_id] = view
                self._parents[event.invocation_id] = parent
            parent.add_child(view)
            return
        mode = self._mode()
        if mode == "none":
            return
        view = StepView(event, mode=mode)
        with self._lock:
            self._views[event.invocation_id] = view
        if mode == "widget" and _comms_live():
            handle = self._show({WIDGET_MIME: view.widget().view_data()}, raw=True, display_id=True)
            with self._lock:
                self._handles[event.invocation_id] = handle
        self.last_view = view

    def _finish(self, view: StepView, handle: Any) -> None:
        if handle is not None:
            handle.update({}, raw=True)  # the live placeholder becomes an empty output
        self.last_view = view
        self._show(view)
