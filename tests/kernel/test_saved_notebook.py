"""What a notebook executed by nbclient saves, and what nbconvert makes of it, when a cell runs many steps.

A natural function called in a loop, as a user would do over the rows of a table: 10 steps in one cell and
100 in another, executed once for the module with nbclient's defaults (widget state stored), then exported
with nbconvert's default HTML template.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parents[2]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

SETUP = '''\
%load_ext nighthawk
import nighthawk
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

# One round per step: the model returns the label straight away.
answer = ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "'bug' if 'crash' in text else 'idea'"})
labeller = FunctionModel(lambda messages, info: ModelResponse(parts=[answer]), model_name="labeller")
%nighthawk model labeller

@nighthawk.natural_function
def classify(text: str) -> str:
    """natural
    Return the label of <text>: bug or idea.
    """'''
CELLS = [SETUP, "labels = [classify(f'crash {n}') for n in range(10)]", "labels = [classify(f'idea {n}') for n in range(100)]"]


def _kernel_env() -> dict[str, str]:
    # The checkout's packages first (as the kernel tests do); nothing else is set, as on a user's machine.
    paths = [str(REPO / "core"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.fixture(scope="module")
def saved() -> Any:
    """The notebook as nbclient saves it with its default settings."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3").execute(env=_kernel_env())
    return nbformat.reads(nbformat.writes(notebook), as_version=4)


def _outputs(saved: Any, index: int) -> list[Any]:
    return saved.cells[index].outputs


def test_loop_cell_saves_one_display_of_all_its_steps(saved: Any) -> None:
    shown = [output for output in _outputs(saved, 2) if "text/plain" in output.get("data", {})]
    assert len(shown) == 1
    assert shown[0].data["text/plain"].startswith("Natural steps · 100 steps · 100 completed · 100 requests")


def test_no_saved_output_is_empty(saved: Any) -> None:
    empty = [(index, output) for index, cell in enumerate(saved.cells) for output in cell.outputs if not output.get("data", True)]
    assert empty == []


def test_saved_step_display_holds_no_widget_view(saved: Any) -> None:
    (final,) = [output for output in _outputs(saved, 2) if "text/html" in output.get("data", {})]
    assert set(final.data) == {"text/plain", "text/html"}


def test_live_widget_is_saved_as_a_closed_view(saved: Any) -> None:
    live = [output.data[WIDGET_MIME] for output in _outputs(saved, 2) if WIDGET_MIME in output.get("data", {})]
    assert live == [{"version_major": 2, "version_minor": 0, "model_id": ""}]


def test_saved_notebook_keeps_no_state_of_the_closed_live_widgets(saved: Any) -> None:
    assert "widgets" not in saved.metadata


def test_default_html_export_loads_no_widget_manager_from_the_network(saved: Any) -> None:
    from nbconvert import HTMLExporter

    page, _ = HTMLExporter().from_notebook_node(saved)
    assert "Natural steps</b>" in page
    assert "@jupyter-widgets/html-manager" not in page and "unpkg.com" not in page


def test_saved_cell_grows_sub_linearly_with_its_steps(saved: Any) -> None:
    ten, hundred = (len(json.dumps(_outputs(saved, index))) for index in (1, 2))
    assert hundred < ten * 1.5


def test_default_html_export_shows_the_steps_with_no_widget_script(saved: Any) -> None:
    from nbconvert import HTMLExporter

    page, _ = HTMLExporter().from_notebook_node(saved)
    assert "Natural steps</b> · <span class=\"nh-counts\">100 steps · 100 completed</span>" in page
    assert not re.search(r'<script type="application/vnd\.jupyter\.widget-view\+json">', page)
