"""The ipywidgets view of a step (nighthawk_ipython/_widgets.py), checked through `get_state()`."""

from __future__ import annotations

import pytest
from kernel_scripts import step_events
from traitlets import TraitError

from nighthawk_ipython import StepView, StepWidget


def feed(view: StepView, events: list) -> None:
    for event in events:
        view.apply(event)


def parts(view: StepView) -> tuple:
    header, outcome, sections = view.widget().children
    return header, outcome, sections


def test_widget_is_built_from_stock_containers() -> None:
    view = StepView(step_events()[0])
    header, outcome, sections = parts(view)
    assert [type(w).__name__ for w in (header, outcome, sections)] == ["HTML", "HTML", "Accordion"]


def test_widget_opens_the_tool_calls_section_first() -> None:
    view = StepView(step_events()[0])
    assert parts(view)[2].get_state()["selected_index"] == 0


def test_tool_call_appears_while_the_step_runs() -> None:
    events = step_events(calls=1)
    view = StepView(events[0])
    widget = view.widget()
    view.apply(events[2])  # ToolCallStarted
    tools = parts(view)[2].children[0]
    assert "<code>nh_eval</code>" in tools.get_state()["value"]
    assert "<i>running</i>" in tools.get_state()["value"]
    assert widget.status == "running"


def test_finished_step_shows_status_and_usage_in_the_header() -> None:
    events = step_events(calls=2)
    view = StepView(events[0])
    view.widget()
    feed(view, events[1:])
    header = parts(view)[0].get_state()["value"]
    assert '<span class="nh-status">completed</span>' in header
    assert "2 requests · 100 in / 20 out tokens" in header


def test_section_titles_count_calls_and_changes() -> None:
    events = step_events(calls=3)
    view = StepView(events[0])
    view.widget()
    feed(view, events[1:])
    assert parts(view)[2].get_state()["titles"] == ("Tool calls (3)", "Step locals (1 changed)", "Nested steps (0)", "Prompt")


def test_prompt_section_holds_the_exact_prompt() -> None:
    events = step_events()
    view = StepView(events[0])
    feed(view, events[1:])
    prompt = parts(view)[2].children[3].get_state()["value"]
    assert "<pre>SYSTEM</pre>" in prompt and "USER &lt;values&gt;" in prompt


def test_nested_step_widget_sits_inside_the_parent() -> None:
    parent = StepView(step_events("outer")[0])
    child = StepView(step_events("inner", parent="outer")[0])
    parent.widget()
    parent.add_child(child)
    nested = parts(parent)[2].children[2]
    assert nested.children == (child.widget(),)


def test_status_trait_rejects_an_unknown_status() -> None:
    widget = StepView(step_events()[0]).widget()
    with pytest.raises(TraitError, match=r"Invalid step status 'lost': choose from \['running', 'completed'"):
        widget.status = "lost"


def test_view_data_names_the_widget_model() -> None:
    widget = StepView(step_events()[0]).widget()
    assert widget.view_data() == {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}


def test_widget_class_is_the_public_step_widget() -> None:
    assert isinstance(StepView(step_events()[0]).widget(), StepWidget)
