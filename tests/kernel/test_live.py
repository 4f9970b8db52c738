"""The kernel-wide step displayer (nighthawk_ipython/_live.py), fed with synthetic events."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.events import EventManager, available_events
from kernel_scripts import step_events

from nighthawk_ipython._code import put_step_code
from nighthawk_ipython._live import StepDisplayer, display_mode_override


class Recorder:
    def __init__(self) -> None:
        self.shown: list[Any] = []

    def __call__(self, obj: Any, **kwargs: Any) -> None:
        self.shown.append(obj)


class Shell:
    """Just the parts of a shell the displayer uses: the `post_run_cell` event that ends a cell, and the next
    input `%nighthawk code` fills."""

    def __init__(self) -> None:
        self.events = EventManager(self, available_events)

    def end_cell(self) -> None:
        self.events.trigger("post_run_cell", None)

    def set_next_input(self, code: str, replace: bool = False) -> None:
        self.next_input = code


def displayer(mode: str = "html") -> tuple[StepDisplayer, Recorder, Shell]:
    recorder, shell = Recorder(), Shell()
    return StepDisplayer(lambda: mode, display=recorder, shell=shell), recorder, shell


def feed(listener: StepDisplayer, *streams: list[Any]) -> None:
    for stream in streams:
        for event in stream:
            listener(event)


def test_steps_of_one_cell_are_displayed_once_when_the_cell_ends() -> None:
    listener, recorder, shell = displayer()
    feed(listener, step_events("a"), step_events("b"), step_events("c"))
    assert recorder.shown == []
    shell.end_cell()
    (shown,) = recorder.shown
    assert [view.invocation_id for view in shown.steps] == ["a", "b", "c"]


def test_three_hundred_steps_in_one_cell_make_one_display() -> None:
    listener, recorder, shell = displayer()
    feed(listener, *(step_events(f"step-{n}") for n in range(300)))
    shell.end_cell()
    assert len(recorder.shown) == 1
    assert recorder.shown[0].text().startswith("Natural steps · 300 steps · 300 completed · 600 requests")


def test_each_cell_gets_its_own_display() -> None:
    listener, recorder, shell = displayer()
    feed(listener, step_events("first"))
    shell.end_cell()
    feed(listener, step_events("second"))
    shell.end_cell()
    assert [[view.invocation_id for view in cell.steps] for cell in recorder.shown] == [["first"], ["second"]]


def test_cell_end_hook_is_removed_once_the_cell_is_shown() -> None:
    listener, _, shell = displayer()
    feed(listener, step_events())
    shell.end_cell()
    assert shell.events.callbacks["post_run_cell"] == []


def test_nested_step_is_shown_inside_its_parent_only() -> None:
    listener, recorder, shell = displayer()
    outer, inner = step_events("outer"), step_events("inner", parent="outer")
    feed(listener, outer[:1], inner, outer[1:])
    shell.end_cell()
    (shown,) = recorder.shown
    (step,) = shown.steps
    assert [child.invocation_id for child in step.children] == ["inner"]
    assert "    nested:" not in shown.text() and "  nested:" in shown.text()


def test_nothing_is_displayed_in_none_mode() -> None:
    listener, recorder, shell = displayer("none")
    feed(listener, step_events())
    shell.end_cell()
    assert recorder.shown == []


def test_steps_in_none_mode_are_kept_for_their_code() -> None:
    listener, _, shell = displayer("none")
    feed(listener, step_events("quiet"))
    shell.end_cell()
    assert listener.find_step(None).invocation_id == "quiet"


def test_listener_in_none_mode_is_inactive_only_while_a_map_runs() -> None:
    listener, _, _ = displayer("none")
    assert listener.active is True
    listener.mute(True)  # a map keeps none of its items' steps: no events are built for them
    assert listener.active is False


def test_cell_override_beats_the_kernel_mode() -> None:
    listener, recorder, shell = displayer("none")
    with display_mode_override("text"):
        feed(listener, step_events())
    shell.end_cell()
    assert [cell.mode for cell in recorder.shown] == ["text"]


def test_events_of_an_unknown_step_are_ignored() -> None:
    listener, recorder, shell = displayer()
    feed(listener, step_events()[1:])
    shell.end_cell()
    assert recorder.shown == []


def test_fifty_tool_calls_are_all_listed_in_order() -> None:
    listener, recorder, shell = displayer()
    feed(listener, step_events(calls=50))
    shell.end_cell()
    lines = [line.strip() for line in recorder.shown[0].text().splitlines() if line.strip()[:1].isdigit()]
    assert len(lines) == 50 and lines[0].startswith("1. nh_eval") and lines[-1].startswith("50. nh_eval")


def test_listed_step_shows_its_returned_value_not_the_expression() -> None:
    from nighthawk import events

    listener, recorder, shell = displayer()
    for name in ("a", "b"):
        stream = step_events(name)
        returned = events.OutcomeReached(invocation_id=name, kind="return", return_expression="'bug' if 'crash' in text else 'idea'", return_value='"bug"')
        feed(listener, [returned if isinstance(event, events.OutcomeReached) else event for event in stream])
    shell.end_cell()
    assert '  #2 In[1]:2 · completed · return "bug" · total = 6 · 2 requests' in recorder.shown[0].text()


def test_after_a_map_the_code_of_an_older_step_is_not_given_as_the_last() -> None:
    listener, _, shell = displayer()
    feed(listener, step_events("before"))
    shell.end_cell()
    listener.mute(True)  # what a map does while its items run: their steps are not kept
    listener.mute(False)
    with pytest.raises(UsageError, match=r"the last steps ran in a `nighthawk.map`, which keeps none .*; give one of"):
        put_step_code(shell, listener, None, echo=False)


def test_a_step_that_ran_a_map_and_finished_after_it_is_the_last_step() -> None:
    listener, _, shell = displayer()
    started, *rest = step_events("mapper")
    feed(listener, [started])
    listener.mute(True)  # the step's model code runs a map
    listener.mute(False)
    feed(listener, rest)
    shell.end_cell()
    put_step_code(shell, listener, None, echo=False)
    assert shell.next_input == listener.find_step(None).as_python()
    assert listener.find_step(None).invocation_id == "mapper"
