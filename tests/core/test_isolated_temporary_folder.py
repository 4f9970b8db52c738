"""An isolated child's private temporary folder is removed once the child has ended, whatever shape the model's
code gave it: a tree nested deeper than Python's recursion limit too (`shutil.rmtree` recursed into it on Python
3.11, and the reaper thread died with a `RecursionError`, leaving the folder and every later child's behind)."""

from __future__ import annotations

import os
import sys
import time

import pytest

import nighthawk as nh
from isolated_maps import folders, run_map, together
from isolated_steps import look
from scripting import finish, model_code, scripted_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")

NEST = """
import os, tempfile
fd = os.open(tempfile.gettempdir(), os.O_RDONLY)
for _ in range(1500):
    os.mkdir("d", dir_fd=fd)
    deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = deeper
os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
"""


def gone(folder: str, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while os.path.exists(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(folder)


def test_a_temporary_folder_nested_deeper_than_the_recursion_limit_is_removed() -> None:
    executor, _ = scripted_executor(
        model_code("nh_eval", f"exec({NEST!r})"), [finish("return", return_expression="__import__('tempfile').gettempdir()")]
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        folder = look()
    assert "nighthawk-isolated-" in folder
    assert gone(folder)


def test_the_folders_of_a_waves_workers_nested_that_deep_are_removed() -> None:
    before = folders()
    result = run_map("nested", together(lambda text: [f"exec({NEST!r})"], lambda text: "text"))
    assert result.errors == {}
    deadline = time.monotonic() + 30
    while folders() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert folders() - before == set()

