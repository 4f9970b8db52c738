"""What goes wrong around a wave of isolated steps ends only the steps it concerns, each with a clear error,
and leaves no process and no folder: an interrupt while the wave is forked, sockets that cannot be made, a
worker that cannot be forked, the wave killed, the interpreter's exit with steps still running."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from pathlib import Path

import pytest

import nighthawk as nh
from isolated_maps import kernel_forks, nothing_left, review, run_map, texts, together
from nighthawk.oversight.isolation import _parent, _reaping, _waves
from nighthawk.testing import CallbackExecutor

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only"),
    pytest.mark.usefixtures("nothing_left"),
]
__all__ = ["kernel_forks", "nothing_left"]  # fixtures, used by name


def forking_the_wave() -> bool:
    return any(frame.name == "_fork_wave" for frame in traceback.extract_stack())


def test_an_interrupt_while_the_wave_is_forked_ends_the_map_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    fork, interrupted = os.fork, []

    def fork_then_interrupt() -> int:
        pid = fork()
        if pid and not interrupted and forking_the_wave():
            interrupted.append(pid)
            signal.raise_signal(signal.SIGINT)  # Ctrl-C while the wave is forked: held until its steps have it
        return pid

    monkeypatch.setattr(os, "fork", fork_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_map("interrupted", together(lambda _: ["__import__('time').sleep(30)"], lambda _: "text"))
    assert interrupted


def test_sockets_that_cannot_be_made_fail_each_item_of_the_wave_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    made = socket.socketpair

    def socketpair() -> tuple[socket.socket, socket.socket]:
        if forking_the_wave():
            raise OSError(24, "Too many open files")
        return made()

    monkeypatch.setattr(_waves.socket, "socketpair", socketpair)
    result = run_map("sockets", together(lambda _: [], lambda _: "text"))
    assert result.errors  # the items of the wave
    for error in result.errors.values():
        assert isinstance(error, nh.errors.IsolationUnavailableError)
        assert "Too many open files" in str(error)
    assert [value for value in result if value is not None] == [text for n, text in enumerate(texts("sockets")) if n not in result.errors]


def test_a_worker_the_wave_cannot_fork_fails_its_item_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    spawn, kernel = _parent._Child.spawn, os.getpid()

    def spawn_outside_the_kernel(self: _parent._Child, *arguments: object) -> tuple[int, bool]:
        if os.getpid() != kernel:  # in the wave
            raise OSError(11, "Resource temporarily unavailable")
        return spawn(self, *arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(_parent._Child, "spawn", spawn_outside_the_kernel)
    result = run_map("spawns", together(lambda _: [], lambda _: "text"))
    assert result.errors
    for error in result.errors.values():
        assert isinstance(error, nh.errors.IsolationUnavailableError)
        assert "Resource temporarily unavailable" in str(error)


def test_the_items_of_a_killed_wave_fail_and_their_folders_are_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    waves: list[int] = []
    await_wave = _reaping.reaper.await_wave

    def noted(pid: int, temp_dirs: list[str]) -> None:
        waves.append(pid)
        await_wave(pid, temp_dirs)

    def kill_the_first_wave() -> None:
        deadline = time.monotonic() + 60
        while not waves and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(1)  # its workers are running the model's code
        if waves:
            os.kill(waves[0], signal.SIGKILL)

    monkeypatch.setattr(_reaping.reaper, "await_wave", noted)
    threading.Thread(target=kill_the_first_wave, daemon=True).start()
    result = run_map("killed", together(lambda _: ["__import__('time').sleep(5)"], lambda _: "text"))
    assert result.errors
    for error in result.errors.values():
        assert isinstance(error, nh.errors.IsolationError)
        assert "the kernel and its namespace are as they were" in str(error)


def test_the_interpreter_ends_the_isolated_steps_still_running_at_its_exit(tmp_path: Path) -> None:
    # A map on a thread nobody waits for: at the exit its waves end their workers and the folders go.
    script = tmp_path / "exits.py"
    script.write_text(textwrap.dedent(
        f"""
        import sys, threading, time
        sys.path[:0] = {[str(Path(__file__).parent.parent)]!r}
        from isolated_maps import run_map, together
        threading.Thread(target=run_map, args=("exit", together(lambda _: ["__import__('time').sleep(600)"],
                         lambda _: "text")), daemon=True).start()
        time.sleep(3)
        """
    ))
    environment = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, str(script)], env=environment, timeout=120, check=True)
    assert not list(tmp_path.glob("nighthawk-isolated-*"))


def test_the_fork_of_an_isolated_step_runs_under_no_steps_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # The deadline's exception could land between the new pid namespace and the fork: never while forking.
    from nighthawk.threads import _deadline

    spawn, deadlines = _parent._Child.spawn, []

    def noting(self: _parent._Child, *arguments: object) -> tuple[int, bool]:
        deadlines.append(_deadline._current.get())
        return spawn(self, *arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(_parent._Child, "spawn", noting)
    executor = CallbackExecutor(together(lambda _: [], lambda _: "text", items=1))
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        assert review("deadline") == "deadline"
    assert deadlines == [None]
