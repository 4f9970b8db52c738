"""A kernel that starts the way most users start: the magics registered lazily by the startup file, no
`%load_ext`. Nothing the model receives may be masked just because the IPython shell is reachable from
the notebook namespace (through `exit` and `quit`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.kernel_client import execute

jupyter_client = pytest.importorskip("jupyter_client")
from jupyter_client.manager import start_new_kernel  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
STARTUP = REPO / "jupyter-config" / "ipython" / "startup" / "50-nighthawk.py"

# The startup file's own code, run in the kernel exactly as IPython runs a startup file (in the user
# namespace); no `%load_ext`: the first magic used loads the extension.
SETUP = f"""
exec(compile(open({str(STARTUP)!r}, encoding="utf-8").read(), "50-nighthawk.py", "exec"))
import json
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.messages import ModelResponse, ToolCallPart

seen = []

def script(messages, info):
    seen.append((messages, info))
    if len(seen) == 1:
        return ModelResponse(parts=[ToolCallPart("nh_eval", {{"expression": "tool_name"}})])
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {{"kind": "pass"}})])

def sent():
    messages, info = seen[-1]
    texts = [info.instructions or ""]
    texts += [str(getattr(part, "content", "")) for message in messages for part in message.parts]
    texts += [json.dumps(tool.parameters_json_schema) for tool in (*info.function_tools, *info.output_tools)]
    return texts

scripted = FunctionModel(script, model_name="scripted")
tool_name = "nighthawk"
"""


def _kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("NIGHTHAWK_NO_AUTOLOAD", None)
    paths = [str(REPO / "core"), str(REPO)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _errors(messages: list[dict[str, Any]]) -> str:
    return "\n".join(
        "\n".join(m["content"].get("traceback", [])) or m["content"].get("text", "")
        for m in messages
        if m["msg_type"] in ("error", "stream")
    )


@pytest.fixture(scope="module")
def sent_texts() -> Iterator[list[str]]:
    """Everything the model received in the last request of one `%%natural` cell of an autoloaded kernel."""
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60, env=_kernel_env())
    try:
        for code in (SETUP, "%nighthawk model scripted", "%%natural\nSay which tool <tool_name> names.\n"):
            messages, reply = execute(kc, code)
            assert reply["content"]["status"] == "ok", _errors(messages)
        messages, reply = execute(kc, "print(json.dumps(sent()))")
        assert reply["content"]["status"] == "ok", _errors(messages)
        (printed,) = [m["content"]["text"] for m in messages if m["msg_type"] == "stream"]
        yield json.loads(printed)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_nothing_the_model_receives_is_masked_under_autoload(sent_texts: list[str]) -> None:
    assert [text for text in sent_texts if "<masked>" in text] == []


def test_the_word_nighthawk_reaches_the_model_in_a_tool_result_under_autoload(sent_texts: list[str]) -> None:
    assert any('"value": "nighthawk"' in text for text in sent_texts)
