"""Loading, unloading and the kernel-wide step display (nighthawk_ipython/__init__.py, _extension.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output
from kernel_scripts import outcome, scripted
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

import nighthawk_ipython
from nighthawk import _listeners, events
from nighthawk_ipython._state import state_for

REPO = Path(__file__).resolve().parents[2]


def python(code: str) -> str:
    """Run `code` in a fresh interpreter with the repo importable; return its stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


LOAD = (
    "import sys\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "shell = InteractiveShell.instance()\n"
    "shell.run_line_magic('load_ext', 'nighthawk')\n"
)


TRIPLE = '''
import nighthawk

@nighthawk.natural_function
def triple(x):
    """natural
    Return <x> tripled.
    """
'''


def test_import_nighthawk_does_not_import_ipython() -> None:
    assert python("import sys, nighthawk; print('IPython' in sys.modules)") == "False"


def test_loading_imports_neither_pydantic_ai_nor_ipywidgets() -> None:
    out = python(LOAD + "print(sorted(m for m in ('pydantic_ai', 'ipywidgets', 'nighthawk_ipython._magics') if m in sys.modules))")
    assert out == "[]"


def test_magics_are_listed_before_their_module_is_imported() -> None:
    out = python(LOAD + "t = shell.magics_manager.lsmagic(); print('natural' in t['cell'], 'nighthawk' in t['line'])")
    assert out == "True True"


def test_first_natural_cell_imports_the_magics(ip: Any) -> None:
    out = python(LOAD + "shell.run_cell('%nighthawk display text'); print('nighthawk_ipython._magics' in sys.modules)")
    assert out == "True"


def test_loading_twice_registers_the_hook_once(ip: Any) -> None:
    nighthawk_ipython.load_ipython_extension(ip)
    hook = state_for(ip).pre_run_cell
    assert ip.events.callbacks["pre_run_cell"].count(hook) == 1


def test_settings_are_registered_for_config(ip: Any) -> None:
    assert state_for(ip).settings in ip.configurables


def test_unload_removes_the_cell_magic(ip: Any) -> None:
    ip.run_line_magic("unload_ext", "nighthawk")
    try:
        with pytest.raises(UsageError, match=r"Cell magic `%%natural` not found"):
            ip.run_cell_magic("natural", "", "Do nothing.")
    finally:
        ip.run_line_magic("load_ext", "nighthawk")


def test_unload_stops_listening_to_steps(ip: Any) -> None:
    displayer = state_for(ip).displayer
    ip.run_line_magic("unload_ext", "nighthawk")
    try:
        assert displayer not in _listeners._process_listeners
    finally:
        ip.run_line_magic("load_ext", "nighthawk")


def test_reload_keeps_natural_cells_working(shell: Any, use_model: Any) -> None:
    shell.run_line_magic("reload_ext", "nighthawk")
    use_model(scripted([outcome("return", return_expression="'again'")]))
    assert shell.run_cell_magic("natural", "", "Say it again.") == "again"


def test_natural_function_called_from_a_plain_cell_is_displayed(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("return", return_expression="x * 3")]))
    shell.run_cell(TRIPLE)
    with capture_output() as captured:
        result = shell.run_cell("triple(5)")
    assert result.result == 15
    (output,) = captured.outputs
    assert "outcome: return x * 3 -> 15" in output.data["text/plain"]


def _by_program(messages: list[Any], info: Any) -> ModelResponse:
    prompt = str(messages[0].parts[-1].content)
    program = prompt.split("<<<NH:END_PROGRAM>>>")[0]  # the LOCALS name `triple` with its program's first line
    done = any(part.part_kind == "tool-return" for message in messages for part in getattr(message, "parts", ()))
    if "Return <x> tripled" in program:
        return ModelResponse(parts=[outcome("return", return_expression="x * 3")])
    if done:
        return ModelResponse(parts=[outcome("pass")])
    return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "result", "expression": "triple(2)"})])


def test_nested_step_appears_inside_the_cell_step(shell: Any) -> None:
    nighthawk_ipython.configure(model=FunctionModel(_by_program), shell=shell)
    shell.run_cell(TRIPLE)
    with capture_output() as captured:
        shell.run_cell("%%natural\nTriple two into <:result>.")
    (output,) = captured.outputs
    assert shell.user_ns["result"] == 6
    text = output.data["text/plain"]
    assert "  nested:\n    Natural step __main__:" in text
    assert "outcome: return x * 3 -> 6" in text


# A shell that can be asked to stop, as terminal and kernel shells can (a bare InteractiveShell cannot).
STOPPABLE = (
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "class Stoppable(InteractiveShell):\n"
    "    def ask_exit(self):\n"
    "        self.exit_now = True\n"
    "shell = Stoppable.instance()\n"
    "shell.run_line_magic('load_ext', 'nighthawk')\n"
    "import nighthawk\n"
    "shell.run_cell('import nighthawk; executor = nighthawk.get_step_executor()')  # the first use: the extension gets ready\n"
)


def test_exit_outside_a_step_still_asks_the_shell_to_stop() -> None:
    assert python(STOPPABLE + "shell.run_cell('exit()')\nprint(shell.exit_now)") == "True"


def test_unload_gives_the_shell_its_own_ask_exit_back() -> None:
    out = python(
        STOPPABLE + "guarded = 'ask_exit' in vars(shell)\n"
        "shell.run_line_magic('unload_ext', 'nighthawk')\nprint(guarded, 'ask_exit' in vars(shell))"
    )
    assert out == "True False"


def test_a_natural_function_in_the_load_ext_cell_gets_the_kernel_executor() -> None:
    code = "%load_ext nighthawk\nimport nighthawk\nexecutor = nighthawk.get_step_executor()"
    shell = "from IPython.core.interactiveshell import InteractiveShell\nshell = InteractiveShell.instance()\n"
    out = python(shell + f"shell.run_cell({code!r})\nprint(type(shell.user_ns['executor']).__name__)")
    assert out == "AgentStepExecutor"
