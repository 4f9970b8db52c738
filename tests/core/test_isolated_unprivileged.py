"""Isolated steps of an ordinary user: a forked keeper makes the worker's user and pid namespace, a path that a
test session run as root never takes on its own. The scenarios run in one process that becomes `nobody`
(`tests/unprivileged_isolation.py`); run as an ordinary user, the whole suite takes that path already."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only"),
    pytest.mark.skipif(sys.platform.startswith("linux") and os.geteuid() != 0, reason="as an ordinary user, every isolated test takes this path"),
]

NOBODY = 65534
SCRIPT = Path(__file__).parents[1] / "unprivileged_isolation.py"


@pytest.fixture(scope="module")
def found() -> Iterator[dict[str, Any]]:
    """What each scenario found, run as `nobody` in one process."""
    folder = Path(tempfile.mkdtemp(prefix="nighthawk-unprivileged-"))
    writable, kept = folder / "writable", folder / "kept"
    writable.mkdir()
    kept.mkdir()
    (kept / "victim.txt").write_text("precious")
    (kept / "victim.txt").chmod(0o600)
    for path in (folder, writable, kept, kept / "victim.txt"):
        os.chown(path, NOBODY, NOBODY)  # the user's own: only the walls keep the step from them
    try:
        ran = subprocess.run(
            [sys.executable, str(SCRIPT), str(writable), str(kept / "victim.txt")],
            capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        results = json.loads(ran.stdout.strip().splitlines()[-1])
        if "unavailable" in results["a_step_binds_and_returns"]:
            pytest.skip(f"this machine gives an ordinary user no namespaces: {results['a_step_binds_and_returns']['unavailable']}")
        results["victim"] = (kept / "victim.txt").read_text()
        yield results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_scenarios_ran_as_an_ordinary_user(found: dict[str, Any]) -> None:
    assert found["euid"] == NOBODY


def test_an_ordinary_users_step_runs_as_its_namespaces_first_process_and_its_bindings_come_back(found: dict[str, Any]) -> None:
    assert found["a_step_binds_and_returns"] == {"result": f"(1, {NOBODY}, 45)"}


def test_an_ordinary_users_child_that_exits_is_told_with_its_status(found: dict[str, Any]) -> None:
    assert found["exit_status"]["error"] == "IsolationError"
    assert "exited with status 3" in found["exit_status"]["message"]


def test_an_ordinary_users_child_that_crashes_is_told_as_a_crash(found: dict[str, Any]) -> None:
    assert "crashed (SIGSEGV)" in found["crash"]["message"]


def test_an_ordinary_users_step_cannot_delete_the_users_own_file_outside_writable(found: dict[str, Any]) -> None:
    assert found["delete_outside_writable"] == [{"result": "None"}, True]
    assert found["victim"] == "precious"


def test_an_ordinary_users_step_cannot_change_the_mode_of_the_users_own_file(found: dict[str, Any]) -> None:
    outcome, mode = found["chmod_outside_writable"]
    assert outcome == {"result": "None"}
    assert mode == "0o600"


def test_an_ordinary_users_child_drops_the_capabilities_of_its_user_namespace(found: dict[str, Any]) -> None:
    held = ast.literal_eval(found["capabilities"]["result"])
    kept = 0b110  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: over its own files only, in its namespace
    assert {name: mask & ~kept for name, mask in held.items()} == dict.fromkeys(held, 0), held


def test_an_ordinary_users_child_writes_its_own_copies_of_the_kernels_shared_memory(found: dict[str, Any]) -> None:
    assert found["shared_memory"] == {"step": {"result": "(b'model!', b'model!')"}, "kernel": ["kernel", "kernel"], "file": "kernel"}


def test_an_ordinary_users_writable_folder_is_writable(found: dict[str, Any]) -> None:
    assert found["write_in_writable"] == [{"result": "None"}, "made"]


def test_an_ordinary_users_budget_ends_the_child_and_the_process_it_started(found: dict[str, Any]) -> None:
    ended = found["budget_kills_the_tree"]
    assert ended["step"]["error"] == "BudgetExceededError"
    assert ended["sleeper_started"]
    assert found["processes_left"] == 0


def test_an_ordinary_users_map_shares_forks_of_the_kernel_and_answers_every_item(found: dict[str, Any]) -> None:
    mapped = found["a_map_in_waves"]
    assert mapped["results"] == [f"UNPRIVILEGED {n}" for n in range(8)]
    assert 1 <= mapped["kernel_forks"] < 8


def test_an_ordinary_users_temporary_folder_is_removed_with_a_folder_it_cannot_list(found: dict[str, Any]) -> None:
    # The model's code made a folder of mode 0o333 with a file in it: neither `rmtree` nor `rm -rf` lists it.
    assert found["unlistable_folder_left"] is False


def test_an_ordinary_users_own_terminal_cannot_be_read(found: dict[str, Any]) -> None:
    read = found["terminal_read"]
    assert read["step"] == {"result": "None"}  # the step ran; the model's read failed, so nothing was bound
    assert read["left"] == "hunter2\n"


def test_an_ordinary_users_steps_leave_no_folder_and_no_process(found: dict[str, Any]) -> None:
    assert found["folders_left"] == []
    assert found["processes_left"] == 0
