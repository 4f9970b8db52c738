"""The ipywidgets view of a step, built only from stock containers and filled from events.

Layout: a header `HTML` (status, model, duration, requests, tokens and the program), an outcome `HTML`, then
an `Accordion` with the tool calls (open), the step-locals diff, the nested steps and the exact prompt.
Each section is one `HTML` child re-rendered from the `StepView` when an event touches it, so a tool call
shows up while the block is still running. ipywidgets is imported only when a widget is first built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
from traitlets import TraitError, Unicode, validate

from ._display import STEP_STATUSES

if TYPE_CHECKING:
    from ._display import StepView

__all__ = ["StepWidget"]

_SECTIONS = ("tools", "locals", "nested", "prompt")
_TOOLS, _LOCALS, _NESTED, _PROMPT = range(len(_SECTIONS))


class StepWidget(widgets.VBox):
    """A live view of one step: header, outcome, and an accordion of tool calls, locals, nested steps and prompt."""

    status = Unicode("running", help="The step's status, mirrored for tests and styling.").tag(sync=False)

    @validate("status")
    def _check_status(self, proposal: Any) -> str:
        if proposal["value"] not in STEP_STATUSES:
            raise TraitError(f"Invalid step status {proposal['value']!r}: choose from {list(STEP_STATUSES)}")
        return proposal["value"]

    @classmethod
    def for_view(cls, view: StepView) -> StepWidget:
        """Build the widget for `view` and render every section once."""
        header = widgets.HTML()
        outcome = widgets.HTML()
        tools, locals_, prompt = widgets.HTML(), widgets.HTML(), widgets.HTML()
        nested = widgets.VBox()
        sections = widgets.Accordion(children=[tools, locals_, nested, prompt], selected_index=_TOOLS)
        widget = cls(children=[header, outcome, sections])
        widget.add_class("nh-step-widget")
        widget._parts = {
            "header": header,
            "outcome": outcome,
            "tools": tools,
            "locals": locals_,
            "nested": nested,
            "prompt": prompt,
        }
        widget._sections = sections
        widget.refresh(view, "all")
        return widget

    def refresh(self, view: StepView, section: str) -> None:
        """Re-render `section` (`header`, `tools`, `locals`, `outcome`, `prompt`, `nested` or `all`) from `view`."""
        parts = self._parts
        everything = section == "all"
        if everything or section == "header":
            parts["header"].value = view.header_html()
            self.status = view.status
        if everything or section == "outcome":
            parts["outcome"].value = view.outcome_html()
        if everything or section == "tools":
            parts["tools"].value = view.tools_html()
        if everything or section == "locals":
            parts["locals"].value = view.locals_html()
        if everything or section == "prompt":
            parts["prompt"].value = view.prompt_html()
        if everything or section == "nested":
            children = tuple(child.widget() for child in view.children)
            if children != parts["nested"].children:
                parts["nested"].children = children
        if everything or section in ("tools", "locals", "nested"):
            self._sections.titles = (
                f"Tool calls ({len(view.tool_calls)})",
                f"Step locals ({len(view.changes)} changed)",
                f"Nested steps ({len(view.children)})",
                "Prompt",
            )

    def view_data(self) -> dict[str, Any]:
        """The `application/vnd.jupyter.widget-view+json` payload for this widget."""
        return {"version_major": 2, "version_minor": 0, "model_id": self.model_id}
