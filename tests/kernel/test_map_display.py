"""`nighthawk.map` in a notebook kernel started the way users start one (the startup file loads the extension):
one live display for the whole map while it runs, then one static summary, and no display per item.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("jupyter_client")

from live import Live, autoloading_ipython_dir, live_kernel  # noqa: E402
from support.kernel_client import execute  # noqa: E402

SETUP = '''
import nighthawk
from live_models import directed
%nighthawk model directed
%nighthawk display widget

def checked(x):
    if x in (7, 107):
        raise ValueError(f"no label for {x}")
    return x

@nighthawk.natural_function
def doubled(x: int) -> int:
    """natural
    RETURN checked(x) * 2
    """
'''

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with autoloading_ipython_dir() as env, live_kernel(SETUP, env=env) as kernel:
        yield kernel


def _messages(live: Live, code: str) -> list[dict[str, Any]]:
    messages, reply = execute(live.kc, code, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    return messages


def _outputs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The data of the outputs a saved notebook keeps (update_display_data changes one, it adds none)."""
    return [m["content"]["data"] for m in messages if m["msg_type"] in ("display_data", "execute_result")]


def test_a_200_item_map_leaves_one_summary_output_and_no_step_outputs(live: Live) -> None:
    messages = _messages(live, "results = nighthawk.map(doubled, range(200, 400), concurrency=8)")
    static = [data for data in _outputs(messages) if WIDGET_MIME not in data]
    assert len(static) == 1
    assert static[0]["text/plain"].startswith("nighthawk.map 200/200 | 0 failed | ")
    assert 'class="nh-map nh-done"' in static[0]["text/html"]
    assert live.ok("results == [2 * x for x in range(200, 400)]").result == "True"


def test_the_map_is_shown_live_while_it_runs_and_the_live_output_is_emptied(live: Live) -> None:
    messages = _messages(live, "results = nighthawk.map(doubled, range(400, 600), concurrency=8)")
    kinds = [m["msg_type"] for m in messages]
    first = _outputs(messages)[0]
    assert list(first) == [WIDGET_MIME]  # nbval skips it: only the summary is compared
    running = [
        i for i, m in enumerate(messages)
        if m["msg_type"] == "comm_msg" and "nh-map nh-running" in str(m["content"]["data"].get("state", {}).get("value", ""))
    ]
    summary = next(i for i, m in enumerate(messages) if m["msg_type"] == "display_data" and "text/plain" in m["content"]["data"])
    assert running and running[0] < summary
    closed = [m for m in messages if m["msg_type"] == "update_display_data"]
    assert [m["content"]["data"][WIDGET_MIME]["model_id"] for m in closed] == [""]
    assert kinds.index("update_display_data") < summary


def test_the_summary_lists_the_failed_items(live: Live) -> None:
    messages = _messages(live, 'results = nighthawk.map(doubled, range(200), on_error="collect")')
    (summary,) = [data for data in _outputs(messages) if WIDGET_MIME not in data]
    lines = summary["text/plain"].splitlines()
    assert lines[0].startswith("nighthawk.map 198/200 | 2 failed | ")
    assert [line.split(":")[0] for line in lines[1:]] == ["  item 7", "  item 107"]
    assert lines[1].startswith("  item 7: ExecutionError: ")


def test_progress_false_shows_nothing(live: Live) -> None:
    messages = _messages(live, "results = nighthawk.map(doubled, range(600, 700), progress=False)")
    assert _outputs(messages) == []
    assert not [m for m in messages if m["msg_type"] == "stream"]


def test_steps_after_the_map_are_displayed_again(live: Live) -> None:
    messages = _messages(live, "nighthawk.map(doubled, range(700, 710))\ndoubled(3)")
    static = [m["content"]["data"] for m in messages if m["msg_type"] == "display_data" and WIDGET_MIME not in m["content"]["data"]]
    assert len(static) == 2
    assert static[0]["text/plain"].startswith("nighthawk.map 10/10 | 0 failed | ")
    assert "checked(x) * 2" in static[1]["text/plain"]  # the step of `doubled(3)`, shown once the cell ends
