"""Ctrl-C during the first step's import of the provider's libraries gives control back at once.

The first step of a process imports pydantic-ai and the provider's SDK (seconds). A user who presses Ctrl-C
then gets the prompt back within a second, and the import still completes on its own thread, so the next
step finds the modules whole. The import is slowed down on purpose here (an import hook that waits), so the
interrupt surely lands during it; a plain Python process gets a real SIGINT.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = '''
import importlib.abc, sys, time

SLOW = "pydantic_ai.models.openai"  # the provider's model module, imported by the first step


class SlowImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == SLOW:
            print("importing", flush=True)
            time.sleep(4)
        return None


sys.meta_path.insert(0, SlowImport())

import nighthawk as nh


@nh.natural_function
def double(x: int) -> int:
    """natural
    Return <x> doubled.
    """


configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-test", max_retries=0)
nh.set_default_step_executor(nh.AgentStepExecutor.from_configuration(configuration=configuration))
try:
    double(2)
except KeyboardInterrupt:
    print("interrupted", flush=True)
import pydantic_ai.models.openai as module  # waits for the import going on on another thread, if any
print("whole" if hasattr(module, "OpenAIChatModel") else "half", flush=True)
'''


def test_ctrl_c_during_the_first_steps_provider_import_returns_within_a_second(tmp_path: Path) -> None:
    script = tmp_path / "first_step.py"
    script.write_text(PROGRAM)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)]),
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # never reached: the step is interrupted first
    }
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "importing"
        time.sleep(0.3)  # well inside the import
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        assert child.stdout.readline().strip() == "interrupted"
        waited = time.monotonic() - sent
        assert child.stdout.readline().strip() == "whole"
        assert child.wait(timeout=30) == 0, child.stderr.read() if child.stderr else ""
    finally:
        child.kill()
    assert waited < 1.0, f"control came back {waited:.1f} s after Ctrl-C"
