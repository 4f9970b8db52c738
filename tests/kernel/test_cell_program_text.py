"""A `%%natural` cell hands its executor the cell below the magic line, dedented, with its final newline."""

from __future__ import annotations

from typing import Any

import nighthawk as nh
from nighthawk.testing import ScriptedExecutor, pass_outcome


def test_cell_program_handed_to_the_executor_keeps_its_final_newline(shell: Any) -> None:
    script = ScriptedExecutor([pass_outcome()])
    nh.set_default_step_executor(script)
    shell.user_ns["values"] = [3, 1]
    result = shell.run_cell("%%natural\n  Summarise <values>.\n    Keep it short.\n", store_history=True)
    result.raise_error()
    assert [call.program for call in script.calls] == ["Summarise <values>.\n  Keep it short.\n"]
