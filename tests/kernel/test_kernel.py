"""A real ipykernel: the running event loop, interrupts, and what reaches the notebook's outputs.

One kernel is started for the module (a few seconds); each test runs cells through `jupyter_client` and
reads the iopub messages the cell produced, the way nbclient and nbval see them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.kernel_client import execute

jupyter_client = pytest.importorskip("jupyter_client")
from jupyter_client.manager import start_new_kernel  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

SETUP = '''
%load_ext nighthawk
import asyncio
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.messages import ModelResponse, ToolCallPart

def script(messages, info):
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "total", "expression": "sum(values)"})])
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "total * 2"})])

async def sleepy(messages, info):
    await asyncio.sleep(30)
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])

scripted = FunctionModel(script, model_name="scripted")
slow = FunctionModel(sleepy, model_name="slow")
%nighthawk model scripted
values = [1, 2, 3]
'''


def _kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    # Works installed or from a checkout: the repo's packages go first on the kernel's path.
    paths = [str(REPO / "core"), str(REPO)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


@pytest.fixture(scope="module")
def kernel() -> Iterator[tuple[Any, Any]]:
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60, env=_kernel_env())
    try:
        messages, reply = execute(kc, SETUP)
        assert reply["content"]["status"] == "ok", _errors(messages)
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _errors(messages: list[dict[str, Any]]) -> str:
    return "\n".join(
        "\n".join(m["content"].get("traceback", [])) or m["content"].get("text", "")
        for m in messages
        if m["msg_type"] in ("error", "stream")
    )


def _of_type(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["msg_type"] == kind]


def test_natural_cell_runs_inside_the_kernel_event_loop(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    messages, reply = execute(kc, "%%natural\nSum <values> into <:total>, then return it doubled.")
    assert reply["content"]["status"] == "ok", _errors(messages)
    (result,) = _of_type(messages, "execute_result")
    assert result["content"]["data"]["text/plain"] == "12"


def test_live_widget_is_shown_first_as_a_widget_only_output(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    messages, _ = execute(kc, "%%natural\nSum <values> into <:total>, then return it doubled.")
    first = _of_type(messages, "display_data")[0]
    assert set(first["content"]["data"]) == {WIDGET_MIME}
    assert first["content"]["transient"]["display_id"]


def test_live_widget_output_becomes_a_closed_view_when_the_cell_ends(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    messages, _ = execute(kc, "%%natural\nSum <values> into <:total>, then return it doubled.")
    live = _of_type(messages, "display_data")[0]
    (update,) = _of_type(messages, "update_display_data")
    assert update["content"]["transient"]["display_id"] == live["content"]["transient"]["display_id"]
    assert update["content"]["data"] == {WIDGET_MIME: {"version_major": 2, "version_minor": 0, "model_id": ""}}


def test_final_display_has_only_the_static_forms(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    messages, _ = execute(kc, "%%natural\nSum <values> into <:total>, then return it doubled.")
    final = _of_type(messages, "display_data")[-1]["content"]["data"]
    assert set(final) == {"text/plain", "text/html"}
    assert "nh_assign" in final["text/plain"]
    assert "return total * 2 -> 12" in final["text/plain"]


def test_plain_cell_calling_a_natural_function_is_displayed(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    define = (
        "import nighthawk\n"
        "@nighthawk.natural_function\n"
        "def double_sum(values):\n"
        '    """natural\n'
        "    Sum <values> into <:total>, then return it doubled.\n"
        '    """\n'
    )
    messages, reply = execute(kc, define)
    assert reply["content"]["status"] == "ok", _errors(messages)
    messages, reply = execute(kc, "answer = double_sum([4, 5])\nanswer")
    assert reply["content"]["status"] == "ok", _errors(messages)
    final = _of_type(messages, "display_data")[-1]["content"]["data"]
    assert "completed" in final["text/plain"]
    assert _of_type(messages, "execute_result")[0]["content"]["data"]["text/plain"] == "18"


def test_interrupt_fails_the_cell_with_keyboard_interrupt(kernel: tuple[Any, Any]) -> None:
    km, kc = kernel
    execute(kc, "total = 'before'")
    messages, reply = execute(
        kc, "%%natural --model slow\nSet <:total> to 99.", interrupt_after=(km, 2.0), timeout=20
    )
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    final = _of_type(messages, "display_data")[-1]["content"]["data"]["text/plain"]
    assert " · interrupted · " in final


def test_interrupt_leaves_the_namespace_unchanged_and_the_next_cell_runs(kernel: tuple[Any, Any]) -> None:
    km, kc = kernel
    execute(kc, "total = 'before'")
    execute(kc, "%%natural --model slow\nSet <:total> to 99.", interrupt_after=(km, 2.0), timeout=20)
    time.sleep(0.5)  # anything an uncancelled step could still do would happen now
    messages, reply = execute(kc, "total")
    assert _of_type(messages, "execute_result")[0]["content"]["data"]["text/plain"] == "'before'"
    messages, reply = execute(kc, "%%natural\nSum <values> into <:total>, then return it doubled.")
    assert reply["content"]["status"] == "ok", _errors(messages)


def test_cell_error_is_reported_to_the_client(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    messages, reply = execute(kc, "%%natural --display bogus\nDo nothing.")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UsageError"


def test_loop_of_fifty_steps_opens_at_most_three_comms(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    execute(kc, "import nighthawk\n@nighthawk.natural_function\ndef double_sum(values):\n    '''natural\n    Sum <values> into <:total>, then return it doubled.\n    '''")
    messages, reply = execute(kc, "answers = [double_sum([n, 1]) for n in range(50)]")
    assert reply["content"]["status"] == "ok", _errors(messages)
    assert len(_of_type(messages, "comm_open")) <= 3
