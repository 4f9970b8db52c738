"""A kernel started the way most users start one: the startup file an install puts in place declares the
magics, and the first `%nighthawk` loads the extension (no `%load_ext`). What such a user meets: the last
failure on demand, the magics after `%unload_ext`, help, comments on a magic line, interrupted tool calls,
model labels and short tracebacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")

from live import Live, autoloading_ipython_dir, live_kernel  # noqa: E402

SETUP = '''
import time
import nighthawk
from live_models import directed
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel
%nighthawk model directed
%nighthawk display text

@nighthawk.tool
def block(ctx) -> str:
    """Wait for something that never comes (45 s)."""
    time.sleep(45)
    return "done"

def respond(messages, info):
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])

passing = FunctionModel(respond)
'''

HANG_LIMIT = 15.0
"""The blocking tool would run 45 s: a cell that ends before this was interrupted."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with autoloading_ipython_dir() as env, live_kernel(SETUP, env=env) as kernel:
        # The startup file's declaration, not a `%load_ext`, loaded the extension.
        assert kernel.ok("'nighthawk' in get_ipython().extension_manager.loaded").result == "True"
        yield kernel


def test_nighthawk_traceback_shows_a_raise_outcome_that_failed_after_another_failure(live: Live) -> None:
    live.run("%%natural\nNEVER")
    assert live.run("%%natural\nRAISE").ename == "ExecutionError"
    printed = live.ok("%nighthawk traceback").printed
    assert printed.rstrip().endswith("ExecutionError: Natural block raised: cannot")
    assert "did not end the step with a valid outcome" not in printed


def test_last_error_is_the_raise_outcome_of_a_natural_function_called_from_a_plain_cell(live: Live) -> None:
    live.run("%%natural\nNEVER")
    live.ok('@nighthawk.natural_function\ndef refuse() -> None:\n    """natural\n    RAISE\n    """')
    assert live.run("refuse()").ename == "ExecutionError"
    assert live.ok("str(nighthawk.last_error())").result == "'Natural block raised: cannot'"


def test_nighthawk_traceback_shows_a_missing_read_binding_that_failed_last(live: Live) -> None:
    live.run("%%natural\nNEVER")
    assert live.run("%%natural\nCount <no_such_rows>.").ename == "NameError"
    printed = live.ok("%nighthawk traceback").printed
    assert "NameError: name 'no_such_rows' is not defined" in printed


def test_missing_read_binding_error_shows_no_frame_of_the_magic(live: Live) -> None:
    cell = live.run("%%natural\nCount <no_such_rows>.")
    assert "NameError: name 'no_such_rows' is not defined" in _ANSI.sub("", cell.error_text)
    assert "_magics.py" not in cell.error_text


def test_natural_cell_works_again_after_unload_ext() -> None:
    with autoloading_ipython_dir() as env, live_kernel(SETUP, env=env) as own:  # the others keep their magics
        own.ok("%unload_ext nighthawk")
        assert own.ok("%%natural\nRETURN 'back'").result == "'back'"


def test_magics_work_again_after_loading_and_unloading_the_extension_module_too() -> None:
    with autoloading_ipython_dir() as env, live_kernel(SETUP, env=env) as own:
        own.ok("%load_ext nighthawk_ipython")
        own.ok("%unload_ext nighthawk_ipython")
        assert own.ok("%nighthawk limits").printed.startswith("limits:")


def test_nighthawk_help_prints_what_nighthawk_question_mark_shows(live: Live) -> None:
    printed = live.ok("%nighthawk help").printed
    shown = _ANSI.sub("", live.ok("%nighthawk?").payload)
    assert "Show or change the kernel's Nighthawk settings." in printed
    assert printed.startswith("  %nighthawk [--reset]")
    missing = [line for line in printed.splitlines() if line.strip() and line.strip() not in shown]
    assert missing == []


def test_nighthawk_line_ignores_a_comment_after_the_command(live: Live) -> None:
    printed = live.ok("%nighthawk limits   # shows what is in force").printed
    assert printed.startswith("limits:")


def test_natural_line_ignores_a_comment_after_the_options(live: Live) -> None:
    assert live.ok("%%natural --deny raise  # no errors here\nRETURN 7").result == "7"


def test_tool_call_cut_by_an_interrupt_shows_as_interrupted(live: Live) -> None:
    cell = live.run("%%natural\nCALL block", interrupt_after=1.5, timeout=HANG_LIMIT)
    assert cell.ename == "KeyboardInterrupt"
    assert "1. block {} -> (interrupted)" in cell.displayed
    assert "(running)" not in cell.displayed


def test_interrupted_cell_shows_no_frame_of_the_magic(live: Live) -> None:
    cell = live.run("%%natural\nCALL block", interrupt_after=1.5, timeout=HANG_LIMIT)
    assert cell.ename == "KeyboardInterrupt"
    assert cell.error_text.endswith("\nKeyboardInterrupt")
    assert "_magics.py" not in cell.error_text


def test_function_model_is_labelled_by_its_function(live: Live) -> None:
    displayed = live.ok("%%natural -m passing\nDo nothing.").displayed
    assert " · model function:respond · " in displayed


def test_a_bad_config_value_set_before_the_first_magic_is_dropped_with_a_reason() -> None:
    with autoloading_ipython_dir() as env, live_kernel("", env=env) as own:
        own.ok("%config NighthawkSettings.display = 'fancy'")
        first = own.run("%nighthawk limits")
        assert first.status == "ok"
        assert "ignored `%config NighthawkSettings.display = 'fancy'`" in first.printed
        assert own.ok("%nighthawk display text").status == "ok"
