"""`read_only()` in a live kernel: model-written code run from a notebook cannot change a file, not even
through a function the notebook defined, while the notebook's own cells still can.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402

SETUP = BASE_SETUP + '''
import os

def tidy_up(path):
    os.remove(path)

@nighthawk.natural_function
def look(p: str):
    """natural
    RETURN tidy_up(p)
    """
'''


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_kernel(SETUP) as kernel:
        yield kernel


@pytest.fixture
def victim(live: Live, tmp_path: Path) -> Path:
    path = tmp_path / "keep.txt"
    path.write_text("precious")
    live.ok(f"p = {str(path)!r}")
    return path


def test_a_notebook_function_called_by_model_code_cannot_delete_under_read_only(live: Live, victim: Path) -> None:
    cell = live.run("with nighthawk.scope(oversight=nighthawk.oversight.read_only()):\n    look(p)")
    assert victim.read_text() == "precious"
    assert "read_only refused os.remove" in cell.error_text


def test_a_cell_deletes_freely_after_the_step(live: Live, victim: Path) -> None:
    live.run("with nighthawk.scope(oversight=nighthawk.oversight.read_only()):\n    look(p)")
    live.ok("tidy_up(p)")
    assert not victim.exists()


def test_a_value_made_by_model_code_cannot_delete_when_the_notebook_shows_it(live: Live, victim: Path) -> None:
    # The cell's result is shown by IPython after the step: its `__repr__` is the model's code.
    live.ok(
        "@nighthawk.natural_function\n"
        "def make(p: str):\n"
        '    """natural\n'
        "    RETURN type('Shown', (), {'__repr__': lambda self: str(getattr(os, 're' + 'move')(p))})()\n"
        '    """\n'
    )
    live.run("with nighthawk.scope(oversight=nighthawk.oversight.read_only()):\n    shown = make(p)")
    cell = live.run("shown")
    assert victim.read_text() == "precious"
    assert "read_only refused os.remove" in cell.error_text + cell.printed
