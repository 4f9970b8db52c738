"""Run an agent program that writes one JSON object per line, and make sure it is gone afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import NighthawkError
from ._model import AgentFailure

__all__ = ["find_program", "run_json_lines"]

_GRACE_S = 2.0
_STDERR_TAIL = 2_000


def find_program(executable: str | None, default: str, install: str) -> str:
    """The path of the agent program, or a `NighthawkError` saying how to install it."""
    name = executable or default
    path = shutil.which(name)
    if path is None:
        where = f"`executable` {name!r} was not found" if executable else f"the `{default}` program is not on PATH"
        raise NighthawkError(f"{where}: install it ({install}) and log in, or set `executable` to its path")
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
    program = os.path.basename(argv[0])
    stderr = asyncio.ensure_future(process.stderr.read())  # type: ignore[union-attr]
    try:
        process.stdin.write(stdin.encode())  # type: ignore[union-attr]
        await process.stdin.drain()  # type: ignore[union-attr]
        process.stdin.close()  # type: ignore[union-attr]
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
        if process.returncode is None:
            await _stop(process)
        stderr.cancel()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Terminate the program's process group, killing it when it does not end within the grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            await asyncio.shield(asyncio.wait_for(process.wait(), _GRACE_S))
            return
        except asyncio.TimeoutError:
            continue
        except asyncio.CancelledError:
            if process.returncode is None:  # interrupted while waiting: do not leave it running
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            raise
