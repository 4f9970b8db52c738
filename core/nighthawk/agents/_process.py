"""Run an agent program that writes one JSON object per line, and make sure it is gone afterwards.

Every agent runs in a process group of its own, so that stopping it also stops what it started (shells, its
own MCP servers). The groups running now are recorded here: however a turn ends (its result, an error, an
interrupt, a `SystemExit`, a cancelled task) its group is stopped, and at interpreter exit `_kill_live_groups`
kills any group still recorded (a step left running on a daemon thread), so no agent outlives the process.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ModelConfigurationError
from ._model import AgentFailure
from ._private import write_private

__all__ = ["GRACE_S", "find_program", "forget_launched", "run_json_lines", "session_launcher", "signal_launched_group"]

GRACE_S = 2.0
"""Seconds an agent has to end after SIGTERM before it is killed."""
_STDERR_TAIL = 2_000

_live_groups: set[int] = set()
"""The process groups of the agents this process runs now."""
_live_pidfiles: set[str] = set()
"""Files in which a `session_launcher` writes the group of the agent it starts (a program someone else spawns)."""


def _group_in(pidfile: str) -> int | None:
    try:
        with open(pidfile) as file:
            return int(file.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _kill_live_groups() -> None:
    """At interpreter exit: kill every agent group still running (the step that ran it never ended)."""
    groups = set(_live_groups) | {group for path in _live_pidfiles if (group := _group_in(path)) is not None}
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    _live_groups.clear()
    _live_pidfiles.clear()


atexit.register(_kill_live_groups)


def _forget_live_groups() -> None:
    """In a fork of this process (multiprocessing, the user's own): the agents are the parent's, not to be
    killed when the fork exits."""
    _live_groups.clear()
    _live_pidfiles.clear()


os.register_at_fork(after_in_child=_forget_live_groups)


def find_program(executable: str | None, default: str, install: str) -> str:
    """The path of the agent program, or a `ModelConfigurationError` saying how to install it."""
    name = executable or default
    path = shutil.which(name)
    if path is None:
        where = f"`executable` {name!r} was not found" if executable else f"the `{default}` program is not on PATH"
        raise ModelConfigurationError(f"{where}: install it ({install}) and log in, or set `executable` to its path")
    return path


async def run_json_lines(
    argv: Sequence[str],
    *,
    stdin: str,
    cwd: str | None,
    env: Mapping[str, str],
    on_event: Callable[[dict[str, Any]], None],
) -> None:
    """Run `argv` with `stdin` as its input and hand each line it prints, parsed as JSON, to `on_event`.

    The program runs in its own process group, so whatever it starts (its own MCP servers, shells) is
    stopped with it when the turn is cancelled.

    Raises:
        AgentFailure: The program printed a line that is not a JSON object, or exited with a failure status.
    """
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, **env},
        start_new_session=True,
        limit=2**24,  # one event line can hold a large tool result
    )
    _live_groups.add(process.pid)  # start_new_session: its pid is its group
    program = os.path.basename(argv[0])
    stderr = asyncio.ensure_future(process.stderr.read())  # type: ignore[union-attr]
    try:
        try:
            process.stdin.write(stdin.encode())  # type: ignore[union-attr]
            await process.stdin.drain()  # type: ignore[union-attr]
            process.stdin.close()  # type: ignore[union-attr]
        except (BrokenPipeError, ConnectionResetError):
            pass  # it ended before reading its prompt (a refused login, say): its status and stderr say why
        async for raw in process.stdout:  # type: ignore[union-attr]
            line = raw.decode(errors="replace").strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                raise AgentFailure(f"{program} printed a line that is not a JSON object: {line[:200]!r}")
            on_event(event)
        status = await process.wait()
        if status != 0:
            detail = (await stderr).decode(errors="replace").strip()[-_STDERR_TAIL:]
            raise AgentFailure(f"{program} exited with status {status}" + (f": {detail}" if detail else ""))
    finally:
        try:
            if process.returncode is None:
                await _stop(process)
            else:  # the program ended, what it started in the background may not have: its group goes too
                await _stop_group(process.pid)
        finally:
            _live_groups.discard(process.pid)
            stderr.cancel()


async def _stop_group(group: int) -> None:
    """Terminate what is left of a process group whose leader has ended, killing it after the grace period."""
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return  # nothing left: the common case
    deadline = time.monotonic() + GRACE_S
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
    finally:  # the grace is over, or the wait was cancelled: what ignored SIGTERM is not left running
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)  # cannot be ignored: nothing to wait for


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Terminate the program's process group, killing it when it does not end within the grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.shield(asyncio.wait_for(process.wait(), GRACE_S))
            return
        except asyncio.TimeoutError:
            continue
        except BaseException:  # cancelled (or worse) while waiting: do not leave it running
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            raise


# --- a program someone else starts (the Claude Agent SDK spawns `claude` itself) ---------------------------

_LAUNCH = (
    "import os, sys; os.setsid(); "
    "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600); "
    "os.write(fd, str(os.getpid()).encode()); os.close(fd); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def session_launcher(folder: str, program: str) -> tuple[str, str]:
    """A script in the private `folder` that runs `program` (with the script's arguments) as the leader of a
    new session, so in a process group of its own, and writes its pid to a file; (script, pid file).

    The pid file is recorded until `forget_launched` is given it, so interpreter exit kills that group.
    """
    pidfile = os.path.join(folder, "agent.pid")
    command = " ".join(shlex.quote(part) for part in (sys.executable, "-I", "-S", "-c", _LAUNCH, pidfile, program))
    script = write_private(folder, "launch-agent", f"#!/bin/sh\nexec {command} \"$@\"\n", mode=0o700)
    _live_pidfiles.add(pidfile)
    return script, pidfile


def signal_launched_group(pidfile: str, sig: int) -> None:
    """Send `sig` to the group a `session_launcher` started, if it has started and anything of it is left."""
    if (group := _group_in(pidfile)) is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, sig)


def forget_launched(pidfile: str) -> None:
    """The launched group is stopped: interpreter exit need not (and must not, its pid being free) kill it."""
    _live_pidfiles.discard(pidfile)
