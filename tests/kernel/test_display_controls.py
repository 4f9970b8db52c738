"""Step displays against a model that writes terminal escapes, bidi overrides and zero-width characters.

A tool call's arguments and result, an error message and a program come from the model or from values; shown
raw, `\\x1b[2K` erases a terminal line and `\\u202e` reverses what follows, so the display would lie. Both forms
write such characters as `<U+XXXX>`, and the HTML escapes its markup as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kernel_scripts import step_events

from nighthawk import events
from nighthawk_ipython import StepView
from nighthawk_ipython._display import CellView

ERASE = "\x1b[2K"  # erase the terminal line
REVERSED = "\u202e"  # right-to-left override: `txt.exe` reads as `exe.txt`
ZERO_WIDTH = "\u200b"
RAW = (ERASE, REVERSED, ZERO_WIDTH, "\x1b")


def _view(*, program: str = "Sum <values> into <:total>.", arguments: str = '{"expression":"0 + 1"}', result: str = "1",
          error: str | None = None, failure: str | None = None) -> StepView:
    """A finished step whose one tool call (and maybe whose failure) carries the given texts."""
    started, prompt, call_started, call_finished, *rest = step_events()
    view = StepView(dataclasses.replace(started, program=program))
    call_started = dataclasses.replace(call_started, arguments=arguments)
    call_finished = dataclasses.replace(
        call_finished, result=result, error_kind=None if error is None else "execution", error_message=error
    )
    for event in (prompt, call_started, call_finished, *rest[:-1]):
        view.apply(event)
    if failure is not None:
        view.apply(events.StepFailed(invocation_id=started.invocation_id, error_type="ValueError",
                                     error_kind="execution", error_message=failure, interrupted=False))
    view.apply(rest[-1])
    return view


def _raw_free(text: str) -> None:
    assert not any(character in text for character in RAW), repr(text)


def test_text_writes_a_terminal_escape_in_tool_arguments_as_a_code_point() -> None:
    text = _view(arguments='{"expression":"' + ERASE + 'print(1)"}').text()
    _raw_free(text)
    assert '<U+001B>[2Kprint(1)' in text


def test_text_writes_a_bidi_override_in_a_tool_result_as_a_code_point() -> None:
    text = _view(result=f"'{REVERSED}txt.exe'").text()
    _raw_free(text)
    assert "<U+202E>txt.exe" in text


def test_text_writes_hidden_characters_in_an_error_message_as_code_points() -> None:
    text = _view(error=f"bad{ZERO_WIDTH}name{ERASE}ok", failure=f"boom{REVERSED}").text()
    _raw_free(text)
    assert "bad<U+200B>name<U+001B>[2Kok" in text and "boom<U+202E>" in text


def test_text_writes_hidden_characters_in_the_program_as_code_points() -> None:
    text = _view(program=f"Sum <values>{ZERO_WIDTH} into <:total>.{ERASE}").text()
    _raw_free(text)
    assert "Sum <values><U+200B> into <:total>.<U+001B>[2K" in text


def test_html_writes_a_bidi_override_as_an_escaped_code_point() -> None:
    page = _view(arguments='{"expression":"\'' + REVERSED + 'txt.exe\'"}', error=f"x{ERASE}").html()
    _raw_free(page)
    assert "&lt;U+202E&gt;txt.exe" in page and "x&lt;U+001B&gt;[2K" in page


def test_html_still_escapes_markup_from_the_model() -> None:
    page = _view(result="<script>alert(1)</script>").html()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_cell_summary_and_live_view_write_hidden_characters_as_code_points() -> None:
    cell = CellView(mode="widget")
    for program in (f"First{REVERSED} block.", "Second block."):
        view = _view(program=program, result=f"1{ERASE}")
        cell.add(view)
    for shown in (cell.text(), cell.html(), cell.live_html()):
        _raw_free(shown)
    assert "First<U+202E> block." in cell.text()


def test_the_as_python_section_keeps_its_python_escapes() -> None:
    started, *rest = step_events()
    view = StepView(started)
    call = events.ToolCallStarted(invocation_id=started.invocation_id, call_id="c", tool_name="nh_eval",
                                  arguments="{}", expression=f"'{REVERSED}txt.exe'")
    done = events.ToolCallFinished(invocation_id=started.invocation_id, call_id="c", tool_name="nh_eval",
                                   result="''", error_kind=None, error_message=None, duration_s=0.0)
    for event in (rest[0], call, done, *rest[-4:]):
        view.apply(event)
    assert "'\\u202etxt.exe'" in view.text() and "'\\u202etxt.exe'" in view.as_python()
