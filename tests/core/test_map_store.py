"""`nighthawk.map(..., store="file.sqlite")`: finished items kept on disk, as JSON through the return type.

The mapped functions live in a module written to a temporary directory, so a test can edit their prompt
and other processes can import the very same function.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import nighthawk as nh
from nighthawk.batch.store import session_store

MODULE = '''
from __future__ import annotations

import asyncio
import dataclasses
import threading

import nighthawk as nh
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel


@dataclasses.dataclass(frozen=True)
class Label:
    name: str
    score: float


@nh.natural_function
def label(text: str) -> Label:
    """natural
    {prompt} <text>.
    """


@nh.natural_function
def opaque(text: str) -> object:
    """natural
    Keep <text>.
    """


class Model:
    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.requests = 0

    async def __call__(self, messages, info) -> ModelResponse:
        self.requests += 1
        await asyncio.sleep(0.001)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {{"kind": "return", "return_expression": self.expression}})])

    def executor(self) -> nh.AgentStepExecutor:
        model = FunctionModel(self, model_name="scripted")
        return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))


LABELLING = "Label(text.upper(), len(text) / 10)"
FAILING = "1 / 0"
'''


pytestmark = pytest.mark.usefixtures("fresh_session_store")


@pytest.fixture
def module(tmp_path: Path) -> Iterator[types.ModuleType]:
    """The module `mapped` in `tmp_path`, with `write(prompt)` to edit its prompt and re-import it."""
    sys.path.insert(0, str(tmp_path))
    try:
        yield write_module(tmp_path, "Label")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mapped", None)


def write_module(directory: Path, prompt: str) -> types.ModuleType:
    (directory / "mapped.py").write_text(MODULE.format(prompt=prompt))
    sys.modules.pop("mapped", None)
    importlib.invalidate_caches()
    return importlib.import_module("mapped")


TEXTS = ["apple", "kiwi", "banana", "fig"]


def test_a_later_session_takes_stored_items_from_the_file_with_their_type(module: types.ModuleType, tmp_path: Path) -> None:
    store = str(tmp_path / "labels.sqlite")
    with nh.run(module.Model(module.LABELLING).executor()):
        first = nh.map(module.label, TEXTS, store=store, progress=False)
    session_store().clear()  # as after a kernel restart
    failing = module.Model(module.FAILING)
    with nh.run(failing.executor()):
        again = nh.map(module.label, TEXTS, store=store, progress=False)
    assert list(again) == list(first) == [module.Label("APPLE", 0.5), module.Label("KIWI", 0.4),
                                          module.Label("BANANA", 0.6), module.Label("FIG", 0.3)]
    assert failing.requests == 0


def test_an_edited_prompt_runs_the_stored_items_again(module: types.ModuleType, tmp_path: Path) -> None:
    store = str(tmp_path / "labels.sqlite")
    with nh.run(module.Model(module.LABELLING).executor()):
        nh.map(module.label, TEXTS, store=store, progress=False)
    session_store().clear()
    edited = write_module(tmp_path, "Label, carefully,")
    model = edited.Model(edited.LABELLING)
    with nh.run(model.executor()):
        nh.map(edited.label, TEXTS, store=store, progress=False)
    assert model.requests == len(TEXTS)


def test_a_value_the_store_cannot_hold_fails_the_map_at_the_first_item(module: types.ModuleType, tmp_path: Path) -> None:
    model = module.Model("threading.Lock()")
    with nh.run(model.executor()), pytest.raises(nh.NighthawkError, match=r"cannot be kept in `store=.*` as JSON"):
        nh.map(module.opaque, TEXTS, store=str(tmp_path / "locks.sqlite"), concurrency=1, progress=False)
    assert model.requests == 1


WRITER = """
import sys
import nighthawk as nh
import mapped

start, stop, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with nh.run(mapped.Model(mapped.LABELLING).executor()):
    nh.map(mapped.label, [f"text {n}" for n in range(start, stop)], store=store, concurrency=16, progress=False)
"""


def test_two_processes_writing_one_store_lose_nothing(module: types.ModuleType, tmp_path: Path) -> None:
    store = str(tmp_path / "shared.sqlite")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    writers = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(start), str(stop), store], env=environment)
        for start, stop in ((0, 150), (100, 250))
    ]
    assert [writer.wait(timeout=300) for writer in writers] == [0, 0]
    failing = module.Model(module.FAILING)
    with nh.run(failing.executor()):
        result = nh.map(module.label, [f"text {n}" for n in range(250)], store=store, progress=False)
    assert failing.requests == 0
    assert result[249] == module.Label("TEXT 249", 0.8)


def test_a_function_whose_source_file_changed_since_import_still_maps(module: types.ModuleType, tmp_path: Path) -> None:
    (tmp_path / "mapped.py").write_text("# rewritten\n")  # its source can no longer be read
    with nh.run(module.Model(module.LABELLING).executor()):
        result = nh.map(module.label, TEXTS, progress=False)
    assert [label.name for label in result] == [text.upper() for text in TEXTS]


FOREIGN_ITEMS = {
    "another program's table": "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)",
    "a view": "CREATE TABLE things (key TEXT, value TEXT, stored REAL); "
    "CREATE VIEW items AS SELECT key, value, stored FROM things",
    "a table without the key": "CREATE TABLE items (key TEXT, value TEXT NOT NULL, stored REAL NOT NULL)",
}


@pytest.mark.parametrize("schema", FOREIGN_ITEMS.values(), ids=FOREIGN_ITEMS.keys())
def test_a_file_whose_items_are_not_a_store_is_refused_before_any_request(
    schema: str, module: types.ModuleType, tmp_path: Path
) -> None:
    import sqlite3

    path = tmp_path / "inventory.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(schema)
    model = module.Model(module.LABELLING)
    with nh.run(model.executor()), pytest.raises(nh.NighthawkError, match=r"inventory\.sqlite.* is not a nighthawk map store"):
        nh.map(module.label, TEXTS, store=str(path), progress=False)
    assert model.requests == 0
