"""The live view of a cell's steps (nighthawk_ipython/_widgets.py and `CellView.live_html`), via `get_state()`."""

from __future__ import annotations

import pytest
from kernel_scripts import step_events
from traitlets import TraitError

from nighthawk_ipython import StepView, StepWidget
from nighthawk_ipython._display import CellView


def cell(*streams: list) -> CellView:
    """A cell fed with the given event streams (each one step)."""
    view = CellView(mode="widget")
    for stream in streams:
        step = StepView(stream[0])
        view.add(step)
        for event in stream[1:]:
            step.apply(event)
    return view


def test_live_widget_is_one_stock_html_widget() -> None:
    import ipywidgets

    widget = StepWidget()
    assert type(widget).__mro__[1] is ipywidgets.HTML
    assert widget.get_state()["_dom_classes"] == ("nh-step-widget",)


def test_live_widget_shows_what_it_is_given() -> None:
    widget = StepWidget()
    widget.show("<b>3 steps</b>", "completed")
    assert (widget.get_state()["value"], widget.status) == ("<b>3 steps</b>", "completed")


def test_tool_call_appears_in_the_live_view_while_the_step_runs() -> None:
    events = step_events(calls=1)
    page = cell(events[:3]).live_html()  # StepStarted, PromptRendered, ToolCallStarted
    assert ">nh_eval</code>" in page and "<i>running</i>" in page


def test_text_the_model_wrote_instead_of_a_tool_call_appears_in_the_live_view_while_the_step_runs() -> None:
    from nighthawk import events as nh_events

    started, prompt, *_ = step_events()
    said = nh_events.ModelText(invocation_id=started.invocation_id, text="I would add them up.", count=2)
    page = cell([started, prompt, said]).live_html()
    assert "model text (2 responses without a tool call), last: &#x27;I would add them up.&#x27;" in page


def test_live_view_of_many_steps_shows_the_running_one_and_the_counts() -> None:
    finished = [step_events(f"done-{n}") for n in range(40)]
    page = cell(*finished, step_events("now", calls=2)[:4]).live_html()
    assert "41 steps · 40 completed · 1 running" in page
    assert "<b>#41</b>" in page and "<b>#40</b>" in page and "<b>#12</b>" not in page


def test_live_view_stays_small_however_many_steps_ran() -> None:
    few = cell(*(step_events(f"s{n}") for n in range(5))).live_html()
    many = cell(*(step_events(f"s{n}") for n in range(500))).live_html()
    assert len(many) < len(few) + 200


def test_live_view_of_a_long_step_shows_only_its_latest_tool_calls() -> None:
    page = cell(step_events(calls=200)).live_html()
    assert "nh-tools" in page and ">200</td>" in page and ">180</td>" not in page


def test_status_trait_rejects_an_unknown_status() -> None:
    with pytest.raises(TraitError, match=r"Invalid step status 'lost': choose from \['running', 'completed'"):
        StepWidget().status = "lost"


def test_view_data_names_the_widget_model() -> None:
    widget = StepWidget()
    assert widget.view_data() == {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}


def test_retired_widget_closes_its_layout_and_style_too() -> None:
    widget = StepWidget()
    parts = (widget, widget.layout, widget.style)
    widget.retire()
    assert [part.comm for part in parts] == [None, None, None]
