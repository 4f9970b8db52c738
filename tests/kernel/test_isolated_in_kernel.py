"""Isolated steps in a live kernel (its IOPub, heartbeat and control threads running when the step forks):
`%%natural --isolated` and `%nighthawk isolated on|off` run the model's code in a walled child; what that code
does to files or to the child itself leaves the kernel, its namespace and the files as they were.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("jupyter_client")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_kernel(BASE_SETUP + "import os\n") as kernel:
        yield kernel


@pytest.fixture
def victim(live: Live, tmp_path: Path) -> Path:
    path = tmp_path / "keep.txt"
    path.write_text("precious")
    live.ok(f"p = {str(path)!r}\nrows = [3, 1, 2]")
    return path


def test_an_isolated_cell_cannot_delete_a_file(live: Live, victim: Path) -> None:
    cell = live.ok("%%natural --isolated\nEVAL os.remove(p)")
    assert victim.read_text() == "precious"
    assert "Permission denied" in cell.result  # type: ignore[operator]


def test_an_isolated_cell_that_ends_its_child_leaves_the_kernel_and_namespace(live: Live, victim: Path) -> None:
    cell = live.run("%%natural --isolated\nASSIGN rows = os._exit(3)")
    assert cell.ename == "IsolationError"
    assert "exited with status 3" in cell.error_text
    assert live.ok("rows").result == "[3, 1, 2]"


def test_write_bindings_of_an_isolated_cell_come_back_and_in_place_changes_do_not(live: Live, victim: Path) -> None:
    live.ok("%%natural --isolated\nASSIGN total = (rows.sort(), sum(rows))[1]\nSort <rows>, set <:total>.")
    assert live.ok("total, rows").result == "(6, [3, 1, 2])"


def test_the_python_of_an_isolated_step_says_in_place_changes_stayed_in_the_child(live: Live, victim: Path) -> None:
    live.ok("%nighthawk display text")
    try:
        live.ok("%%natural --isolated\nEVAL rows.sort()")
        assert "# ran isolated, in a child process" in live.ok("%nighthawk code --print").printed
    finally:
        live.ok("%nighthawk display none")


def test_nighthawk_isolated_on_isolates_every_cell_until_off(live: Live, victim: Path) -> None:
    live.ok("%nighthawk isolated on")
    try:
        assert live.ok("%nighthawk isolated").printed.strip() == "isolated: on"
        cell = live.run("%%natural\nEVAL __import__('ctypes').string_at(0)")
        assert cell.ename == "IsolationError" and "crashed (SIGSEGV)" in cell.error_text
    finally:
        live.ok("%nighthawk isolated off")
    live.ok("%%natural\nEVAL rows.append(9)")
    assert live.ok("rows").result == "[3, 1, 2, 9]"  # in the kernel again: the in-place change is there


def test_what_an_isolated_cells_code_prints_appears_in_the_cells_output(live: Live, victim: Path) -> None:
    cell = live.ok("%%natural --isolated\nEVAL print('counted', len(rows), 'rows')")
    assert "counted 3 rows" in cell.printed


def test_what_an_isolated_cell_printed_before_its_child_exited_appears_with_the_error(live: Live, victim: Path) -> None:
    cell = live.run("%%natural --isolated\nEVAL (print('got this far'), os._exit(3))")
    assert cell.ename == "IsolationError"
    assert "got this far" in cell.printed


def test_an_isolated_cell_writing_the_notebooks_memory_map_leaves_the_file(live: Live, tmp_path: Path) -> None:
    path = tmp_path / "features.f8"
    path.write_bytes(bytes(8 * 1024))  # 1,024 zeros as float64
    live.ok(f"import numpy as np\nfeatures = np.memmap({str(path)!r}, dtype='float64', mode='r+')")
    cell = live.ok("%%natural --isolated\nEVAL (features.__setitem__(0, 999.0), features.flush(), float(features[0]))[-1]")
    assert "999.0" in cell.result  # type: ignore[operator] # the child wrote its own copy
    assert path.read_bytes() == bytes(8 * 1024)
    assert live.ok("float(features[0])").result == "0.0"
