"""A process the user forks from the kernel (multiprocessing, a library, `os.fork`) runs the kernel's exit
handlers when it ends: they must not end what the kernel itself is running (its isolated steps' workers, its
coding agents)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and process groups: Linux")


def test_a_process_the_user_forks_leaves_the_kernels_isolated_steps_running_when_it_exits(tmp_path: Path) -> None:
    script = tmp_path / "forks.py"
    script.write_text(textwrap.dedent(
        f"""
        import glob, os, sys, threading, time
        sys.path[:0] = {[str(Path(__file__).parent.parent)]!r}
        import nighthawk as nh
        from isolated_maps import review, together
        from nighthawk.testing import CallbackExecutor

        answers = []

        def step():
            executor = CallbackExecutor(together(lambda _: ["__import__('time').sleep(3)"], lambda _: "text", items=1))
            with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
                answers.append(review("forked"))

        running = threading.Thread(target=step)
        running.start()
        deadline = time.monotonic() + 60
        while not glob.glob({str(tmp_path / "nighthawk-isolated-*")!r}) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the step's worker runs the model's code
        child = os.fork()
        if child == 0:
            sys.exit(0)  # an ordinary end: the exit handlers run
        os.waitpid(child, 0)
        running.join()
        print(answers)
        """
    ))
    environment = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    finished = subprocess.run([sys.executable, str(script)], env=environment, timeout=120, capture_output=True, text=True, check=True)
    assert finished.stdout.strip() == "['forked']"


def test_a_process_the_user_forks_leaves_the_kernels_coding_agents_running_when_it_exits() -> None:
    from nighthawk.agents import _process

    agent = subprocess.Popen(["sleep", "60"], start_new_session=True)  # an agent leads a process group
    _process._live_groups.add(agent.pid)
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover - the user's fork, ending: its exit handler runs
            _process._kill_live_groups()
            os._exit(0)
        os.waitpid(child, 0)
        time.sleep(0.2)
        assert agent.poll() is None
    finally:
        _process._live_groups.discard(agent.pid)
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait()
