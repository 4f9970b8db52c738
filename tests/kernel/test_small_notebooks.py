"""What a notebook executed by nbclient saves when its cells send a chart or run a map with displays off.

Two notebooks, each executed once for the module in a real kernel with nbclient's defaults: three `%%natural`
cells reading a matplotlib chart (the step display embeds a thumbnail of what it sent), and maps run with
`%nighthawk display none` (no map output, and no output per item).
"""

from __future__ import annotations

import base64
import io
import os
import re
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")
pytest.importorskip("PIL")

REPO = Path(__file__).resolve().parents[2]

SETUP = '''\
%load_ext nighthawk
import nighthawk
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

# The model answers every step at once: a block that reads the chart passes, a labelling one returns.
def answer(messages, info):
    text = str(messages[0].parts[-1].content)
    kind = {"kind": "return", "return_expression": "str(x)"} if "Label <x>" in text else {"kind": "pass"}
    return ModelResponse(parts=[ToolCallPart("nh_outcome", kind)])

seer = FunctionModel(answer, model_name="seer")
%nighthawk model seer'''

# matplotlib's default figure (640x480 at 100 dpi): a 50 kB PNG, sent whole to the model in each cell.
CHART = '''\
import matplotlib
matplotlib.use("agg")
import matplotlib.pyplot as plt

chart, axes = plt.subplots()
axes.plot(range(100), [x * x % 17 for x in range(100)], marker="o")
axes.set_title("sales")
plt.close(chart)'''
LOOKS = ["%%natural\nLook at <chart>.", "%%natural\nDoes <chart> rise?", "%%natural\nDoes <chart> fall?"]

LABEL = '''\
%nighthawk display none

@nighthawk.natural_function
def label(x: int) -> str:
    """natural
    Label <x>.
    """'''
MAPS = [
    LABEL,
    "labels = nighthawk.map(label, range(200), concurrency=8)",
    "labels = nighthawk.map(label, range(200, 400), concurrency=8, progress=True)",
    "labels[:2]",
]

CHART_NOTEBOOK_MAX_BYTES = 60_000
"""Each chart cell saves its step display (about 6 kB of HTML and text) and one thumbnail of at most
160x120 px (a JPEG of about 5 kB, 6.5 kB in base64): under 15 kB a cell, so three cells and the setup fit in
60 kB. Embedding the 50 kB PNG itself made each cell 74 kB (226 kB in all)."""


def _execute(cells: list[str]) -> Any:
    """The notebook as nbclient saves it with its default settings."""
    paths = [str(REPO / "core"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3")
    client.execute(env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
    return notebook


@pytest.fixture(scope="module")
def charts() -> Any:
    return _execute([SETUP, CHART, *LOOKS])


@pytest.fixture(scope="module")
def maps() -> Any:
    return _execute([SETUP, *MAPS])


def _thumbnails(notebook: Any) -> list[bytes]:
    pages = [
        "".join(output.data["text/html"])
        for cell in notebook.cells
        for output in cell.outputs
        if "text/html" in output.get("data", {})
    ]
    return [base64.b64decode(data) for page in pages for data in re.findall(r'src="data:image/jpeg;base64,([^"]+)"', page)]


def test_three_cells_reading_a_chart_save_a_small_notebook(charts: Any) -> None:
    assert len(nbformat.writes(charts)) < CHART_NOTEBOOK_MAX_BYTES


def test_each_chart_cell_saves_one_thumbnail_of_at_most_160_by_120_pixels(charts: Any) -> None:
    from PIL import Image

    thumbnails = _thumbnails(charts)
    assert len(thumbnails) == 3
    for thumbnail in thumbnails:
        with Image.open(io.BytesIO(thumbnail)) as image:
            assert image.size == (160, 120)
        assert len(thumbnail) < 8_000


def test_each_chart_cell_names_the_chart_with_its_size(charts: Any) -> None:
    for cell in charts.cells[2:]:
        text = "".join(output.data["text/plain"] for output in cell.outputs if "text/plain" in output.get("data", {}))
        assert re.search(r"<chart> <attachment 1: image/png, \d+\.\d kB>", text)


def test_a_map_with_display_none_saves_no_output(maps: Any) -> None:
    assert maps.cells[2].outputs == []


def test_a_map_with_display_none_and_progress_saves_only_its_text_summary(maps: Any) -> None:
    (summary,) = maps.cells[3].outputs
    assert set(summary.data) == {"text/plain"}
    assert summary.data["text/plain"].startswith("nighthawk.map 200/200 | 0 failed | ")


def test_the_maps_with_display_none_ran_every_item(maps: Any) -> None:
    (shown,) = maps.cells[4].outputs
    assert shown.data["text/plain"] == "['200', '201']"
