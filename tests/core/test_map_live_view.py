"""What a batch map's live view says before its items start and while its batches run: the notebook view shows
"preparing the batch client" at once, not at a tick that never comes while the client is built; and the lines
at the provider show as submitted and not yet billed, not as "0 requests, $0.0000"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

import nighthawk as nh
from nighthawk.batch import batch_api
from nighthawk.batch.progress import use_renderer
from support.batch_maps import environment, serve  # noqa: F401 - `environment` is a fixture
from support.batch_server import BatchServer
from support.shouting_map import executor, one_round, shout

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(120)]

TEXTS = [f"word {n}" for n in range(12)]


@pytest.fixture
def server(environment: pytest.MonkeyPatch) -> Iterator[BatchServer]:
    with serve(environment, BatchServer(one_round, delay=1.0, lifetime=100.0)) as served:
        yield served


class Displayed:
    """IPython's `display` for a `MapView`, and the handle its live output is updated by."""

    def __call__(self, data: Any, **options: Any) -> Any:
        return self

    def update(self, data: Any, **options: Any) -> None:
        pass


@pytest.fixture
def pages(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each page the notebook view renders, in order, with `built` where the batch client was built."""
    pytest.importorskip("ipywidgets")
    from nighthawk_ipython._mapview import MapView
    from nighthawk_ipython._widgets import StepWidget

    rendered: list[str] = []
    shown = StepWidget.show
    monkeypatch.setattr(StepWidget, "show", lambda self, page, status: (rendered.append(page), shown(self, page, status)))
    build = batch_api._batched_model
    monkeypatch.setattr(batch_api, "_batched_model", lambda *args: (rendered.append("built"), build(*args))[1])
    previous = use_renderer(lambda total, usage, progress: MapView(total, usage, mode="widget", show=Displayed(), live=True, mute=lambda muted: None))
    yield rendered
    use_renderer(previous)


def test_the_notebook_view_says_it_prepares_the_batch_client_before_building_it(server, tmp_path, pages):
    with nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"))

    preparing = [index for index, page in enumerate(pages) if "preparing the batch client" in page]
    assert preparing and preparing[0] < pages.index("built")


def test_the_notebook_view_shows_the_lines_at_the_provider_as_not_yet_billed(server, tmp_path, pages):
    with nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"))

    waiting = [page for page in pages if "in_progress, 0/12 done" in page]
    assert waiting and all("12 lines submitted, not yet billed" in page for page in waiting)
    assert not any("0 requests" in page for page in waiting)


def test_the_progress_line_shows_the_lines_at_the_provider_as_not_yet_billed(server, tmp_path, capsys):
    with nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)

    frames = re.split(r"[\r\n]", capsys.readouterr().err)
    waiting = [frame for frame in frames if "in_progress, 0/12 done" in frame]
    assert waiting and all("| 12 lines submitted, not yet billed |" in frame for frame in waiting)
    assert frames[-2].startswith("nighthawk.map 12/12") and "not yet billed" not in frames[-2]  # the summary
