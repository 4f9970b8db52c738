"""A batch map watched while it waits: the stderr line and the notebook's live view show how the batches stand
and an elapsed time that moves, from the map's start to its end, in the one display they have."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from nighthawk.batch import batch_api, batch_rounds
from nighthawk.batch.progress import MapTally, use_renderer
from nighthawk.budget import UsageTotals
from support.batch_maps import environment, serve  # noqa: F401 - `environment` is a fixture
from support.batch_server import BatchServer
from support.shouting_map import executor, one_round, shout

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(120)]

TEXTS = [f"word {n}" for n in range(12)]


@pytest.fixture
def server(environment: pytest.MonkeyPatch) -> Iterator[BatchServer]:
    with serve(environment, BatchServer(one_round, delay=3.5, lifetime=100.0)) as served:
        yield served


def elapsed(text: str) -> set[str]:
    return set(re.findall(r"(\d+:\d\d) elapsed", text))


def stderr_frames(err: str) -> list[str]:
    return [frame for frame in err.replace("\n", "\r").split("\r") if frame.strip()]


def test_the_progress_line_is_drawn_when_the_map_starts_before_anything_is_sent(server, tmp_path, capsys):
    with nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)
    first = stderr_frames(capsys.readouterr().err)[0]
    assert first.startswith("nighthawk.map 0/12 | preparing the batch client | 0 failed | ")  # nothing sent yet


def test_the_progress_line_moves_while_the_batch_is_waited_on(server, tmp_path, capsys):
    with nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)
    waiting = [frame for frame in stderr_frames(capsys.readouterr().err) if "in_progress, 0/12 done" in frame]
    assert len(set().union(*map(elapsed, waiting))) >= 3  # 3.5 s of waiting, redrawn every second
    assert not any("ETA" in frame for frame in waiting)


def test_the_progress_line_says_how_far_the_answers_of_a_batch_were_handed_back(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(batch_rounds, "HAND_BACK_SLICE", 1)
    monkeypatch.setattr(batch_rounds, "_SAY_EVERY_S", 0.0)
    server.delay = 0.2
    with nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)
    frames = stderr_frames(capsys.readouterr().err)
    handed = [int(found) for frame in frames for found in re.findall(r"processing answers (\d+)/12", frame)]
    assert handed == list(range(1, 12))


def test_a_map_waiting_on_batches_shows_the_time_so_far_not_an_eta() -> None:
    tally = MapTally(2000, UsageTotals())
    tally.set_status("batch batch_1: in_progress, 1/2000 done")
    tally.finished_item()  # one early item would make an ETA of a day
    assert tally.time_text().endswith(" elapsed")


class Displayed:
    """IPython's `display` for a `MapView`: what was displayed, and the handle the live output is updated by."""

    def __init__(self) -> None:
        self.outputs: list[Any] = []

    def __call__(self, data: Any, **options: Any) -> Any:
        self.outputs.append(data)
        return self

    def update(self, data: Any, **options: Any) -> None:
        pass


def test_the_notebook_view_shows_the_batch_state_and_a_moving_elapsed_time_in_one_output(server, tmp_path, monkeypatch):
    pytest.importorskip("ipywidgets")
    from nighthawk_ipython._mapview import MapView
    from nighthawk_ipython._widgets import StepWidget

    pages: list[str] = []
    shown = StepWidget.show
    monkeypatch.setattr(StepWidget, "show", lambda self, page, status: (pages.append(page), shown(self, page, status)))
    displayed = Displayed()

    def factory(total, usage, progress):
        return MapView(total, usage, mode="widget", show=displayed, live=True, mute=lambda muted: None)

    previous = use_renderer(factory)
    try:
        with nh.run(executor()):
            nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"))
    finally:
        use_renderer(previous)

    waiting = [page for page in pages if "in_progress, 0/12 done" in page]
    assert waiting and "nh-running" in waiting[0]
    assert len(set().union(*map(elapsed, waiting))) >= 3
    assert len(displayed.outputs) == 2  # the live widget, updated in place, then the summary
    assert displayed.outputs[1].text.startswith("nighthawk.map 12/12 | 1 batch(es) ended | 0 failed")


def test_the_progress_line_shows_every_running_batch_at_once_not_each_in_turn(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NIGHTHAWK_TOKENIZER", "estimate")
    monkeypatch.setenv("NIGHTHAWK_BATCH_POLL_S", "0.05")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr(batch_api, "GATHER_S", 3.0)  # the 199 others go as one batch on a loaded machine too
    # 200 items: the first request goes alone (batch_1, 15 s), the 199 others together (1 s) meanwhile.
    with BatchServer(one_round, delays=[15.0], delay=1.0, lifetime=100.0) as served, override_allow_model_requests(True):
        monkeypatch.setenv("OPENAI_BASE_URL", served.base_url)
        with nh.run(executor()):
            nh.map(shout, [f"word {n}" for n in range(200)], batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)

    frames = stderr_frames(capsys.readouterr().err)
    big = [index for index, frame in enumerate(frames) if re.search(r"batch batch_\d+: in_progress, 0/\d\d+ done; 1 more running", frame)]
    assert big, "\n".join(frames)
    assert not any("batch batch_1" in frame for frame in frames[big[0]:big[-1] + 1])
