"""Run code in a live kernel through a jupyter_client `BlockingKernelClient` (shared by kernel tests)."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import Any

__all__ = ["execute"]


def execute(
    kc: Any,
    code: str,
    *,
    timeout: float = 60,
    interrupt_after: tuple[Any, float] | None = None,
    stdin: tuple[Any, Callable[[str], str | None]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run `code`; return the iopub messages of the cell (up to idle) and the execute reply.

    The messages are those answering the cell's request, and the comm messages that answer none (the live
    widget's, which a frontend shows whatever their parent). Without `stdin` the cell runs as under nbclient,
    with no input allowed; with `(kernel_manager, answer)` each input request's prompt is passed to `answer`,
    which returns the text to send, or `None` to interrupt the kernel instead.
    """
    msg_id = kc.execute(code, allow_stdin=stdin is not None)
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    interrupt_at = time.monotonic() + interrupt_after[1] if interrupt_after else None
    while True:
        if interrupt_at is not None and time.monotonic() >= interrupt_at:
            interrupt_after[0].interrupt_kernel()
            interrupt_at = None
        if stdin is not None:
            _answer_input(kc, *stdin)
        try:
            message = kc.get_iopub_msg(timeout=0.2)
        except queue.Empty:
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell did not finish within {timeout} s: {code[:60]!r}") from None
            continue
        parent = message["parent_header"].get("msg_id")
        if parent != msg_id and not (parent is None and message["msg_type"].startswith("comm_")):
            continue  # another request's; comm messages answering no request are the cell's live widget
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
        messages.append(message)
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:  # a late reply to an earlier request
        reply = kc.get_shell_msg(timeout=timeout)
    return messages, reply


def _answer_input(kc: Any, km: Any, answer: Callable[[str], str | None]) -> None:
    """Answer an input request the kernel sent, if any, as a person at the frontend would."""
    try:
        request = kc.get_stdin_msg(timeout=0.05)
    except queue.Empty:
        return
    if request["msg_type"] != "input_request":
        return
    text = answer(request["content"]["prompt"])
    if text is None:
        km.interrupt_kernel()
    else:
        kc.input(text)
