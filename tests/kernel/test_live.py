"""The kernel-wide step displayer (nighthawk_ipython/_live.py), fed with synthetic events."""

from __future__ import annotations

from typing import Any

from kernel_scripts import step_events

from nighthawk_ipython._live import StepDisplayer, display_mode_override


class Recorder:
    def __init__(self) -> None:
        self.shown: list[Any] = []

    def __call__(self, obj: Any, **kwargs: Any) -> None:
        self.shown.append(obj)


def displayer(mode: str = "html") -> tuple[StepDisplayer, Recorder]:
    recorder = Recorder()
    return StepDisplayer(lambda: mode, display=recorder), recorder


def test_step_is_displayed_once_when_it_finishes() -> None:
    listener, recorder = displayer()
    events = step_events(calls=2)
    for event in events[:-1]:
        listener(event)
    assert recorder.shown == []
    listener(events[-1])
    assert [view.status for view in recorder.shown] == ["completed"]


def test_nested_step_is_shown_inside_its_parent_only() -> None:
    listener, recorder = displayer()
    outer, inner = step_events("outer"), step_events("inner", parent="outer")
    listener(outer[0])
    for event in inner:
        listener(event)
    for event in outer[1:]:
        listener(event)
    (shown,) = recorder.shown
    assert [child.invocation_id for child in shown.children] == ["inner"]
    assert "    nested:" not in shown.text() and "  nested:" in shown.text()


def test_nothing_is_displayed_in_none_mode() -> None:
    listener, recorder = displayer("none")
    for event in step_events():
        listener(event)
    assert recorder.shown == []


def test_listener_is_inactive_in_none_mode() -> None:
    listener, _ = displayer("none")
    assert listener.active is False


def test_cell_override_beats_the_kernel_mode() -> None:
    listener, recorder = displayer("none")
    with display_mode_override("text"):
        for event in step_events():
            listener(event)
    assert [view.mode for view in recorder.shown] == ["text"]


def test_events_of_an_unknown_step_are_ignored() -> None:
    listener, recorder = displayer()
    for event in step_events()[1:]:
        listener(event)
    assert recorder.shown == []


def test_fifty_tool_calls_are_all_listed_in_order() -> None:
    listener, recorder = displayer()
    for event in step_events(calls=50):
        listener(event)
    lines = [line.strip() for line in recorder.shown[0].text().splitlines() if line.strip()[:1].isdigit()]
    assert len(lines) == 50 and lines[0].startswith("1. nh_eval") and lines[-1].startswith("50. nh_eval")
