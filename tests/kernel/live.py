"""A live ipykernel per test module, driven through jupyter_client as a notebook frontend would.

The kernel imports this repository's packages first and `live_models` (next to this file); each module
passes the cells that set it up. `Live.run` returns what the frontend saw of one cell.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.kernel_client import execute

__all__ = ["BASE_SETUP", "Cell", "Live", "autoloading_ipython_dir", "live_kernel"]

REPO = Path(__file__).resolve().parents[2]

BASE_SETUP = """
%load_ext nighthawk
import threading, time, sys, hashlib, pickle
import nighthawk
from live_models import directed, sleeper, slow_count
%nighthawk model directed
%nighthawk display none
"""
"""The extension loaded, the directed scripted model in force, and no step displays (outputs stay small)."""


@dataclass(frozen=True, kw_only=True)
class Cell:
    """What a frontend saw of one executed cell."""

    status: str
    ename: str | None
    error_text: str
    """The traceback lines of the error, joined as the frontend shows them."""
    printed: str
    """Everything the cell printed (stdout and stderr, where IPython prints a `UsageError`)."""
    result: str | None
    """`text/plain` of the cell's value."""
    displayed: str = ""
    """`text/plain` of everything the cell displayed (the step displays), joined."""
    payload: str = ""
    """`text/plain` of the pages the reply carries (what `%magic?` shows), joined."""


class Live:
    """A running kernel and its client."""

    def __init__(self, km: Any, kc: Any) -> None:
        self.km = km
        self.kc = kc

    def run(
        self,
        code: str,
        *,
        timeout: float = 60,
        interrupt_after: float | None = None,
        answer: Callable[[str], str | None] | None = None,
    ) -> Cell:
        """Execute `code`; with `interrupt_after`, interrupt the kernel that many seconds after sending it; with
        `answer`, allow input and answer each prompt with what it returns (`None` interrupts instead)."""
        messages, reply = execute(
            self.kc,
            code,
            timeout=timeout,
            interrupt_after=(self.km, interrupt_after) if interrupt_after else None,
            stdin=(self.km, answer) if answer is not None else None,
        )
        content = reply["content"]
        results = [m["content"]["data"].get("text/plain") for m in messages if m["msg_type"] == "execute_result"]
        errors = [m for m in messages if m["msg_type"] == "error"]
        return Cell(
            status=content["status"],
            ename=content.get("ename"),
            error_text="\n".join(errors[-1]["content"]["traceback"]) if errors else "",
            printed="".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream"),
            result=results[-1] if results else None,
            displayed="\n".join(m["content"]["data"].get("text/plain", "") for m in messages if m["msg_type"] == "display_data"),
            payload="\n".join(page.get("data", {}).get("text/plain", "") for page in content.get("payload", [])),
        )

    def ok(self, code: str, **kwargs: Any) -> Cell:
        """Execute `code` and fail the test, showing the error, unless the cell succeeded."""
        cell = self.run(code, **kwargs)
        assert cell.status == "ok", f"{code!r} failed:\n{cell.error_text}\n{cell.printed}"
        return cell


STARTUP_FILE = REPO / "jupyter-config" / "ipython" / "startup" / "50-nighthawk.py"


@contextmanager
def autoloading_ipython_dir() -> Iterator[dict[str, str]]:
    """An IPython directory whose startup holds the file an install puts there: what most users start with.

    Yields:
        The environment variables that make a kernel use it.
    """
    with tempfile.TemporaryDirectory(prefix="nh-ipython-") as directory:
        startup = Path(directory) / "profile_default" / "startup"
        startup.mkdir(parents=True)
        shutil.copy(STARTUP_FILE, startup / STARTUP_FILE.name)
        yield {"IPYTHONDIR": directory}


@contextmanager
def live_kernel(setup: str = BASE_SETUP, env: Mapping[str, str] | None = None) -> Iterator[Live]:
    """Start a kernel, run `setup` in it, and shut it down afterwards."""
    from jupyter_client.manager import start_new_kernel

    environment = dict(os.environ)
    paths = [str(REPO / "core"), str(REPO), str(Path(__file__).parent)]
    if environment.get("PYTHONPATH"):
        paths.append(environment["PYTHONPATH"])
    environment.update(
        PYTHONPATH=os.pathsep.join(paths),
        **(env or {}),
    )
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60, env=environment)
    try:
        live = Live(km, kc)
        live.ok(setup)
        yield live
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
