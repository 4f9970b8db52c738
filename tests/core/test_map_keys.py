"""What `nighthawk.map` remembers an item by: a changed value its program reads, another model, other
request settings or prompt fragments make the item run again; nothing changed, it is answered from memory.

The model is scripted: it answers with a return expression that the step evaluates against the item's
own bindings, so a kept answer made under an old value can be told from a fresh one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.batch.store import session_store
from nighthawk.testing import CallbackExecutor, return_outcome

pytestmark = pytest.mark.usefixtures("fresh_session_store")

JUDGING = "'high' if stars >= threshold else 'low'"


class Counting:
    """A scripted model answering each step with `expression`; counts its requests."""

    def __init__(self, expression: str = JUDGING) -> None:
        self.expression = expression
        self.requests = 0
        self.lock = threading.Lock()

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        with self.lock:
            self.requests += 1
        await asyncio.sleep(0.001)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": self.expression})])

    def executor(self, **configuration: object) -> nh.AgentStepExecutor:
        model = FunctionModel(self, model_name="scripted")
        return nh.AgentStepExecutor.from_configuration(
            configuration=nh.StepExecutorConfiguration(model=model, **configuration)  # type: ignore[arg-type]
        )


threshold = 3


@nh.natural_function
def label(stars: int) -> str:
    """natural
    Return "high" if <stars> is at least <threshold>, else "low".
    """


@pytest.fixture
def global_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """`threshold` back at 3 after the test (which sets it with `set_threshold`)."""
    monkeypatch.setattr(sys.modules[__name__], "threshold", 3)


def set_threshold(value: int) -> None:
    global threshold
    threshold = value


def mapped(executor: nh.AgentStepExecutor, *items: int) -> nh.MapResult:
    with nh.run(executor):
        return nh.map(label, list(items), progress=False)


# --- values the program reads -------------------------------------------------------------------------


@pytest.mark.usefixtures("global_threshold")
def test_a_changed_global_the_program_reads_runs_the_item_again() -> None:
    assert list(mapped(Counting().executor(), 4)) == ["high"]
    set_threshold(5)
    model = Counting()
    again = mapped(model.executor(), 4)
    assert list(again) == ["low"]
    assert (model.requests, again.usage.items_kept) == (1, 0)


@pytest.mark.usefixtures("global_threshold")
def test_the_global_set_back_is_answered_from_memory_without_a_request() -> None:
    mapped(Counting().executor(), 4)
    set_threshold(5)
    assert list(mapped(Counting().executor(), 4)) == ["low"]
    set_threshold(3)
    model = Counting("'asked again'")
    again = mapped(model.executor(), 4)
    assert list(again) == ["high"]
    assert (model.requests, again.usage.items_kept) == (0, 1)


language = "French"


@nh.natural_function
def translate(text: str) -> str:
    f"""natural
    Translate <text> into {language}.
    """


def test_a_changed_global_in_an_f_string_block_runs_the_item_again(monkeypatch: pytest.MonkeyPatch) -> None:
    with nh.run(Counting("'bonjour'").executor()):
        nh.map(translate, ["hello"], progress=False)
    monkeypatch.setattr(sys.modules[__name__], "language", "German")
    model = Counting("'hallo'")
    with nh.run(model.executor()):
        again = nh.map(translate, ["hello"], progress=False)
    assert list(again) == ["hallo"]


def labeller(limit: int) -> Callable[[int], str]:
    """A natural function reading `limit` from the call of `labeller` that made it."""

    @nh.natural_function
    def label_against(stars: int) -> str:
        """natural
        Return "high" if <stars> is at least <limit>, else "low".
        """

    return label_against


def test_a_different_enclosing_value_read_by_the_program_runs_the_item_again() -> None:
    with nh.run(Counting("'high' if stars >= limit else 'low'").executor()):
        assert list(nh.map(labeller(3), [4], progress=False)) == ["high"]
        again = nh.map(labeller(5), [4], progress=False)
    assert (list(again), again.usage.items_kept) == (["low"], 0)


class Opaque:
    """A user's object pydantic cannot turn into JSON: a changed one cannot be told from the same one."""

    def __init__(self, level: int) -> None:
        self.level = level


rules = Opaque(3)


@nh.natural_function
def judge(stars: int) -> str:
    """natural
    Return "high" if <stars> is at least <rules>'s level, else "low".
    """


def test_a_read_value_without_a_stable_digest_keeps_nothing_but_equal_items_still_run_once(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Counting("'high' if stars >= rules.level else 'low'")
    with nh.run(model.executor()):
        first = nh.map(judge, [4, 4, 2], progress=False)
        monkeypatch.setattr(rules, "level", 5)  # the same object, changed: its answers must not be kept
        again = nh.map(judge, [4], progress=False)
    assert (list(first), first.usage.items_shared, list(again)) == (["high", "high", "low"], 1, ["low"])
    assert model.requests == 3


def test_a_store_says_when_a_read_value_keeps_it_from_keeping_anything(tmp_path: Path) -> None:
    model = Counting("'high' if stars >= rules.level else 'low'")
    with nh.run(model.executor()), pytest.warns(UserWarning, match=r"keeps none of this map's items.*'rules' that judge reads"):
        nh.map(judge, [4], store=str(tmp_path / "judged.sqlite"), progress=False)
    with nh.run(model.executor()), pytest.warns(UserWarning):
        nh.map(judge, [4], store=str(tmp_path / "judged.sqlite"), progress=False)
    assert model.requests == 2


# --- who answers and what it is asked ---------------------------------------------------------------


def answer_high(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "'high'"})])


def answer_low(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "'low'"})])


def test_another_function_model_with_the_same_label_runs_the_item_again() -> None:
    high, low = (
        nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(answer, model_name="scripted")))
        for answer in (answer_high, answer_low)
    )
    assert high.model_label == low.model_label
    assert list(mapped(high, 4)) == ["high"]
    assert list(mapped(low, 4)) == ["low"]


def test_a_callback_executor_with_another_callback_runs_the_item_again() -> None:
    with nh.run(CallbackExecutor(lambda program, values: return_outcome("'high'"))):
        nh.map(label, [4], progress=False)
    with nh.run(CallbackExecutor(lambda program, values: return_outcome("'low'"))):
        assert list(nh.map(label, [4], progress=False)) == ["low"]


CHANGED_CONFIGURATION = {
    "model_settings": {"model_settings": {"temperature": 1.0}},
    "system fragment": {"system_prompt_suffix_fragments": ("Be strict.",)},
    "user fragment": {"user_prompt_suffix_fragments": ("Be strict.",)},
    "prompt template": {
        "prompts": nh.StepPromptTemplates(step_user_prompt_template=nh.StepPromptTemplates().step_user_prompt_template + "\nBe strict.")
    },
}


@pytest.mark.parametrize("changed", CHANGED_CONFIGURATION.values(), ids=CHANGED_CONFIGURATION.keys())
def test_a_changed_configuration_that_reaches_the_request_runs_the_item_again(changed: dict[str, object]) -> None:
    mapped(Counting("'high'").executor(model_settings={"temperature": 0.0}), 4)
    model = Counting("'low'")
    again = mapped(model.executor(**{"model_settings": {"temperature": 0.0}, **changed}), 4)
    assert (list(again), model.requests) == (["low"], 1)


@pytest.mark.parametrize("fragment", ["system_prompt_suffix_fragment", "user_prompt_suffix_fragment"])
def test_a_prompt_fragment_of_the_enclosing_scope_runs_the_item_again(fragment: str) -> None:
    mapped(Counting("'high'").executor(), 4)
    model = Counting("'low'")
    with nh.run(model.executor()), nh.scope(**{fragment: "Be strict."}):  # type: ignore[arg-type]
        again = nh.map(label, [4], progress=False)
    assert (list(again), model.requests) == (["low"], 1)


def test_another_implicit_reference_of_the_enclosing_scope_runs_the_item_again() -> None:
    with nh.run(Counting("'high'").executor()), nh.scope(implicit_references={"house_rule": "lenient"}):
        nh.map(label, [4], progress=False)
    model = Counting("'low'")
    with nh.run(model.executor()), nh.scope(implicit_references={"house_rule": "strict"}):
        again = nh.map(label, [4], progress=False)
    assert (list(again), model.requests) == (["low"], 1)


def test_a_budget_or_timeout_change_still_answers_from_memory() -> None:
    mapped(Counting("'high'").executor(), 4)
    model = Counting("'low'")
    again = mapped(model.executor(request_timeout_s=30.0, step_budget=nh.UsageBudget(requests=9)), 4)
    assert (list(again), model.requests) == (["high"], 0)


# --- the store file ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("global_threshold")
def test_a_store_written_under_another_global_runs_the_item_again(tmp_path: Path) -> None:
    store = str(tmp_path / "labels.sqlite")
    with nh.run(Counting().executor()):
        nh.map(label, [4], store=store, progress=False)
    session_store().clear()  # as after a kernel restart
    set_threshold(5)
    model = Counting()
    with nh.run(model.executor()):
        again = nh.map(label, [4], store=store, progress=False)
    assert (list(again), model.requests) == (["low"], 1)


WRITER = """
import sys
import nighthawk as nh
import keyed

keyed.threshold = int(sys.argv[2])
with nh.run(keyed.executor("'high' if stars >= threshold else 'low'")):
    nh.map(keyed.label, [2, 4, 6], store=sys.argv[1], progress=False)
"""

KEYED = '''
import nighthawk as nh
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

threshold = 3


@nh.natural_function
def label(stars: int) -> str:
    """natural
    Return "high" if <stars> is at least <threshold>, else "low".
    """


def executor(expression: str) -> nh.AgentStepExecutor:
    def answer(messages, info):
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": expression})])

    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(answer, model_name="scripted")))
'''


def test_another_process_resumes_from_the_store_when_nothing_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "keyed.py").write_text(KEYED)
    store = str(tmp_path / "labels.sqlite")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    subprocess.run([sys.executable, "-c", textwrap.dedent(WRITER), store, "5"], env=environment, check=True, timeout=300)
    monkeypatch.syspath_prepend(str(tmp_path))
    import keyed

    monkeypatch.setattr(keyed, "threshold", 5)
    with nh.run(keyed.executor("'asked again'")):
        result = nh.map(keyed.label, [2, 4, 6], store=store, progress=False)
    assert (list(result), result.usage.requests) == (["low", "low", "high"], 0)
    monkeypatch.setattr(keyed, "threshold", 3)
    with nh.run(keyed.executor("'asked again'")):
        changed = nh.map(keyed.label, [4], store=store, progress=False)
    assert list(changed) == ["asked again"]


def test_an_item_a_store_holds_under_the_previous_key_format_runs_again(tmp_path: Path) -> None:
    import sqlite3

    store = tmp_path / "old.sqlite"
    with nh.run(Counting("'high'").executor()):
        nh.map(label, [1], store=str(store), progress=False)  # makes the file
    session_store().clear()
    # The first format: program, executor class and label, and the arguments; nothing else.
    executor_identity = "nighthawk.executor.AgentStepExecutor:function:scripted"
    source = sys.modules[__name__].__dict__["label"]
    from nighthawk.batch.twin import natural_runtime

    old_key = hashlib.sha256(json.dumps([natural_runtime(source).source, executor_identity, "[4]"]).encode()).hexdigest()
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO items (key, value, stored) VALUES (?, ?, 0)", (old_key, '"stale"'))
    model = Counting("'high'")
    with nh.run(model.executor()):
        again = nh.map(label, [4], store=str(store), progress=False)
    assert (list(again), model.requests) == (["high"], 1)


def test_item_keys_name_the_agent_executor_as_before_it_moved_into_a_package() -> None:
    # A store made before `nighthawk.executor` became `nighthawk.model.executor` keeps its answers only if
    # the keys still name the executor's class as they did.
    from nighthawk.batch.keys import _executor_identity

    identity = _executor_identity(nh.AgentStepExecutor(nh.StepExecutorConfiguration(model="openai:gpt-4o")))
    assert identity["executor"] == "nighthawk.executor.AgentStepExecutor"
