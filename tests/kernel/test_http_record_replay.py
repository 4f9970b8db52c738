"""Record a notebook's store through the real OpenAI provider stack over HTTP, replay it offline in a fresh kernel.

The provider is the loopback OpenAI-compatible server of the test suite; recording goes through
`scripts/record_notebooks.py`, the same path that records the example notebooks from a real model.
"""

from __future__ import annotations

import configparser
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
import pytest
import yaml

from support.openai_server import CHAT_PATH, RESPONSES_PATH, Reply, ScriptedOpenAIServer, tool_call

ROOT = Path(__file__).resolve().parents[2]


def recorder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_notebooks_under_test", ROOT / "scripts" / "record_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_notebook(folder: Path, model: str) -> Path:
    cells = [
        nbformat.v4.new_code_cell(f"%load_ext nighthawk\n%nighthawk model {model}\n%nighthawk replay cells.replay.yaml"),
        nbformat.v4.new_code_cell("numbers = [3, 1, 2]"),
        nbformat.v4.new_code_cell("%%natural\nPut <numbers> in ascending order into <:ordered>."),
        nbformat.v4.new_code_cell("ordered"),
        nbformat.v4.new_code_cell("%%natural\nReturn the largest of <numbers>."),
    ]
    path = folder / "cells.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


SCRIPT = [
    Reply(calls=(tool_call("nh_eval", expression="sorted(numbers)"),)),
    Reply(calls=(tool_call("nh_assign", target_path="ordered", expression="sorted(numbers)"), tool_call("nh_outcome", kind="pass"))),
    Reply(calls=(tool_call("nh_outcome", kind="return", return_expression="max(numbers)"),)),
]


def sanitize_rules() -> list[tuple[re.Pattern[str], str]]:
    """The rules nbval applies to the example notebooks: what legitimately changes between two runs."""
    config = configparser.ConfigParser()
    config.read(ROOT / "notebooks" / "sanitize.cfg")
    return [(re.compile(config[section]["regex"]), config[section]["replace"]) for section in config.sections()]


def outputs(notebook: Any) -> list[list[dict[str, Any]]]:
    """What the cells showed, without execution counts, sanitized as nbval sanitizes the example notebooks."""
    rules = sanitize_rules()

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            for pattern, replacement in rules:
                value = pattern.sub(replacement, value)
            return value
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items() if key != "execution_count"}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    return [clean(list(cell.get("outputs", []))) for cell in notebook.cells]


@pytest.mark.parametrize(("model", "path"), [("openai-chat:gpt-test", CHAT_PATH), ("openai-responses:gpt-test", RESPONSES_PATH)])
def test_store_recorded_over_http_replays_offline_with_identical_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, path: str
) -> None:
    script = recorder()
    notebook_path = write_notebook(tmp_path, model)
    with ScriptedOpenAIServer(list(SCRIPT)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        store, recorded = script.record(notebook_path)
    assert [request.path for request in server.requests] == [path] * 3
    entries = yaml.safe_load(store.read_text())["exchanges"]
    assert [(entry["model"], entry["authored"]) for entry in entries] == [("openai:gpt-test", False)] * 3
    # A fresh kernel, no server and no key: every step is answered from the store, with the same outputs.
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed = script.replay(notebook_path)
    assert outputs(replayed) == outputs(recorded)
    assert outputs(replayed)[3][0]["data"]["text/plain"] == "[1, 2, 3]"

