"""Reaping the kernel's own children of isolated steps, off every step's path.

A killed child is reaped once the operating system has torn its memory down (milliseconds for a large
process); a step, and a map's other items, need not wait for that. One thread reaps the children the steps
killed, in turn, and removes their temporary folders; each wave process (`_waves.py`), which ends by itself
once its steps have, is waited for by a thread of its own, so that it holds up no other reaping, which then
removes its workers' folders. At the
interpreter's exit both finish what they were handed, so that no temporary folder is left behind.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time

from ._folders import remove_folder

__all__ = ["reaper"]


class _Reaper:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[int, tuple[str, ...]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._waves: list[threading.Thread] = []
        atexit.register(self.finish)

    def reap(self, pid: int, temp_dir: str) -> None:
        """Reap the killed child `pid`, then remove `temp_dir`."""
        self._hand(pid, (temp_dir,))

    def _hand(self, pid: int, temp_dirs: tuple[str, ...]) -> None:
        self._queue.put((pid, temp_dirs))
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="nighthawk-isolated-reaper", daemon=True)
                self._thread.start()

    def await_wave(self, pid: int, temp_dirs: list[str]) -> None:
        """Reap the wave process `pid` when it ends, then remove its workers' folders: by then every worker
        has ended (each dies with the wave, if not before), so nothing writes there any more."""
        thread = threading.Thread(target=_wait_and_remove, args=(pid, tuple(temp_dirs)), name="nighthawk-isolated-wave", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no new thread to be had: the one reaper thread waits for it, in turn
            self._hand(pid, tuple(temp_dirs))
            return
        with self._lock:
            self._waves = [wave for wave in self._waves if wave.is_alive()]
            self._waves.append(thread)

    def finish(self, timeout: float = 10.0) -> None:
        """Reap what was handed over so far (each child is killed already, each wave's steps ended), then let
        the threads end; no longer than `timeout` in all."""
        deadline = time.monotonic() + timeout
        thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(None)
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            waves = list(self._waves)
        for wave in waves:
            wave.join(max(0.0, deadline - time.monotonic()))

    def _serve(self) -> None:
        while (handed := self._queue.get()) is not None:
            _wait_and_remove(*handed)

    def forget(self) -> None:
        """In a fork of the kernel: its children are not this process's, and its lock is a new one."""
        self._lock = threading.Lock()
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._waves = []


def _wait_and_remove(pid: int, temp_dirs: tuple[str, ...]) -> None:
    _wait(pid)
    for temp_dir in temp_dirs:  # once reaped: nothing of the child (or of the wave's workers) writes there any more
        remove_folder(temp_dir)


def _wait(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass  # reaped by someone else's SIGCHLD handler


reaper = _Reaper()
os.register_at_fork(after_in_child=reaper.forget)
