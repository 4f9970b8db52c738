"""The live view of a cell's steps: one stock `ipywidgets.HTML`, re-rendered while the steps run.

A single `HTML` widget (three comms with its layout and style models) whatever the number of steps, where a
tree of containers per step would open dozens of comms per step. Its value is the bounded live HTML of the
cell (`CellView.live_html`), with `<details>` for what folds, so no custom JavaScript is needed. The widget
is temporary: when the cell ends it is closed and its output hidden, and the static display takes over.
ipywidgets is imported only when a widget is first built.

Its comm messages answer no request. Tools that execute and save a notebook (nbclient, `jupyter nbconvert
--execute`, papermill) store the state of every widget whose messages answer a cell's request, and ignore
that the widget was closed: the saved notebook would keep a dead widget, and its HTML export would load a
widget manager from the network to show nothing. A frontend handles comm messages whatever their parent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from typing import Any, TypeVar

import ipywidgets as widgets
from traitlets import TraitError, Unicode, validate

from ._records import STEP_STATUSES

__all__ = ["LiveWidget", "StepWidget"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@dataclass(kw_only=True)
class LiveWidget:
    """The live widget of the current cell, its output handle and its render throttle."""

    widget: Any
    handle: Any
    sent_at: float = 0.0
    timer: threading.Timer | None = None


_T = TypeVar("_T")


def _unanswering(action: Callable[[], _T]) -> _T:
    """Run `action` so that the comm messages it sends have no parent request."""
    from IPython import get_ipython

    # ipykernel 7 keeps the request being answered in this context variable; elsewhere messages keep it.
    parent = getattr(getattr(get_ipython(), "kernel", None), "_shell_parent", None)
    if not isinstance(parent, ContextVar):
        return action()

    def detached() -> _T:
        parent.set({})
        return action()

    return copy_context().run(detached)


class StepWidget(widgets.HTML):
    """A live view of the steps one cell started (summary, running steps and their tool calls)."""

    status = Unicode("running", help="Overall status of the cell's steps, mirrored for tests and styling.").tag(sync=False)

    @validate("status")
    def _check_status(self, proposal: Any) -> str:
        if proposal["value"] not in STEP_STATUSES:
            raise TraitError(f"Invalid step status {proposal['value']!r}: choose from {list(STEP_STATUSES)}")
        return proposal["value"]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("nh-step-widget")

    @classmethod
    def live(cls) -> StepWidget:
        """A new widget whose comms answer no request (see the module's docstring)."""
        return _unanswering(cls)

    def show(self, page: str, status: str) -> None:
        """Replace the view with `page` (one comm message)."""
        self.status = status
        _unanswering(lambda: setattr(self, "value", page))

    def retire(self) -> None:
        """Close the widget and the layout and style models it opened (their comms would outlive the cell)."""
        for model in (self.layout, self.style, self):
            _unanswering(model.close)

    def view_data(self) -> dict[str, Any]:
        """The `application/vnd.jupyter.widget-view+json` payload for this widget."""
        return {"version_major": 2, "version_minor": 0, "model_id": self.model_id}


CLOSED_VIEW: dict[str, Any] = {"version_major": 2, "version_minor": 0, "model_id": ""}
"""The view of a closed widget, as JupyterLab itself records it: every frontend hides it."""
