"""`nighthawk.testing`: offline executors, outcome factories, and the real agent on a scripted model."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import types
from collections.abc import Mapping
from pathlib import Path

import pytest
from pydantic_ai.models.test import TestModel

import nighthawk as nh
from nighthawk import events, testing
from nighthawk.answers.outcome import BreakOutcome, ContinueOutcome, PassOutcome, RaiseOutcome, ReturnOutcome
from nighthawk.testing import (
    CallbackExecutor,
    Expression,
    ScriptedExecutor,
    StepResponse,
    agent_executor,
    function_model,
    pass_outcome,
    raise_outcome,
    return_outcome,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


@nh.natural_function
def double(x: int) -> int:
    """natural
    Set <:y> to twice <x>.
    """
    return y  # noqa: F821 - bound by the block's commit


@nh.natural_function
def describe(x: int) -> str:
    """natural
    Describe <x> in one word and return the word.
    """


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(testing).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", testing.__name__) == testing.__name__
        and name not in {"annotations", "TYPE_CHECKING"}
    }
    assert set(testing.__all__) == public | {"ResponseLike"}  # a type alias has no `__module__`


# --- ScriptedExecutor --------------------------------------------------------------------------------


def test_scripted_assignment_is_committed_to_the_write_binding() -> None:
    with nh.run(ScriptedExecutor([StepResponse(assign={"y": 42})])):
        assert double(21) == 42


def test_scripted_expression_assignment_is_evaluated_against_step_locals() -> None:
    with nh.run(ScriptedExecutor([StepResponse(assign={"y": Expression("x * 2")})])):
        assert double(5) == 10


def test_scripted_return_outcome_returns_the_expression_value() -> None:
    script = ScriptedExecutor([StepResponse(assign={"word": "small"}, outcome=return_outcome("word.upper()"))])
    with nh.run(script):
        assert describe(1) == "SMALL"


def test_bare_outcome_is_a_response() -> None:
    with nh.run(ScriptedExecutor([return_outcome("str(x)")])):
        assert describe(7) == "7"


def test_response_mapping_is_a_response() -> None:
    with nh.run(ScriptedExecutor([{"assign": {"y": 8}, "outcome": {"kind": "pass"}}])):
        assert double(4) == 8


def test_response_mapping_with_unknown_key_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"unknown keys \['y'\].*binding values go under `assign`"):
        ScriptedExecutor([{"y": 1}])


def test_evaluate_string_instead_of_list_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"`evaluate` takes a list of expressions"):
        StepResponse(evaluate="items.append(1)")


def test_scripted_evaluate_runs_expressions_in_order_before_assignments() -> None:
    @nh.natural_function
    def collect(items: list[int]) -> int:
        """natural
        Add 1 and 2 to <items>, then set <:count> to its length.
        """
        return count  # noqa: F821

    items: list[int] = []
    response = StepResponse(evaluate=["items.append(1)", "items.append(2)"], assign={"count": Expression("len(items)")})
    with nh.run(ScriptedExecutor([response])):
        assert collect(items) == 2
    assert items == [1, 2]


def test_scripted_raise_outcome_raises_the_named_exception_type() -> None:
    with nh.run(ScriptedExecutor([raise_outcome("no word fits", ValueError)])):
        with pytest.raises(ValueError, match="no word fits"):
            describe(1)


def test_scripted_raise_outcome_without_type_raises_execution_error() -> None:
    with nh.run(ScriptedExecutor([raise_outcome("cannot")])):
        with pytest.raises(nh.ExecutionError, match="Natural block raised: cannot"):
            describe(1)


def test_script_running_out_names_the_block_and_the_count() -> None:
    with nh.run(ScriptedExecutor([StepResponse(assign={"y": 2})])):
        double(1)
        with pytest.raises(AssertionError, match=r"ran out of responses at block '.*:\d+': 1 were scripted in all"):
            double(2)


def test_keyed_script_answers_each_block_from_its_own_list() -> None:
    probe = ScriptedExecutor([StepResponse(assign={"y": 0}), return_outcome("'x'")])
    with nh.run(probe):
        double(0)
        describe(0)
    double_id, describe_id = (call.step_id for call in probe.calls)
    script = ScriptedExecutor({describe_id: [return_outcome("'one'")], double_id: [StepResponse(assign={"y": 6})]})
    with nh.run(script):
        assert describe(1) == "one"
        assert double(3) == 6
    assert script.remaining == 0


def test_keyed_script_without_the_block_lists_the_scripted_blocks() -> None:
    with nh.run(ScriptedExecutor({"elsewhere:1": [pass_outcome()]})):
        with pytest.raises(AssertionError, match=r"no responses for block '.*'; scripted blocks: \['elsewhere:1'\]"):
            double(1)


def test_scripted_executor_records_each_call() -> None:
    script = ScriptedExecutor([StepResponse(assign={"y": 2})])
    with nh.run(script):
        double(1)
    (call,) = script.calls
    assert call.program == "Set <:y> to twice <x>.\n"
    assert (call.reads, call.writes, call.allowed_outcomes) == (("x",), ("y",), ("pass", "return", "raise"))


def test_scripted_value_of_wrong_type_fails_the_block_without_commit() -> None:
    @nh.natural_function
    def typed() -> int:
        count: int = 1
        """natural
        Set <:count>.
        """
        return count

    with nh.run(ScriptedExecutor([StepResponse(assign={"count": "many"})])):
        with pytest.raises(nh.ExecutionError, match=r"scripted nh_assign call for block .* failed \(invalid_input\)"):
            typed()


def test_failed_scripted_assignment_commits_nothing() -> None:
    namespace_seen: dict[str, object] = {}

    @nh.natural_function
    def two_writes() -> None:
        first, second = 0, 0
        try:
            """natural
            Set <:first> and <:second>.
            """
        finally:
            namespace_seen.update(first=first, second=second)

    with nh.run(ScriptedExecutor([StepResponse(assign={"first": 1, "missing.attr": 2})])):
        with pytest.raises(nh.ExecutionError, match=r"'missing' is not a step local"):
            two_writes()
    assert namespace_seen == {"first": 0, "second": 0}


def test_scripted_assignment_emits_the_same_events_as_a_model_assignment() -> None:
    def run(executor: object) -> list[tuple[str, str]]:
        seen: list[events.Event] = []
        with events.listen(seen.append), nh.run(executor):
            double(3)
        return [(type(e).__name__, getattr(e, "tool_name", getattr(e, "target", ""))) for e in seen if type(e).__name__ in {"ToolCallStarted", "ToolCallFinished", "Assignment", "Committed"}]

    scripted = run(ScriptedExecutor([StepResponse(assign={"y": 6})]))
    model = run(agent_executor(function_model([("nh_assign", {"target_path": "y", "expression": "6"})], pass_outcome())))
    assert scripted == model == [
        ("ToolCallStarted", "nh_assign"),
        ("Assignment", "y"),
        ("ToolCallFinished", "nh_assign"),
        ("Committed", ""),
    ]


def test_disallowed_outcome_fails_the_block() -> None:
    with nh.run(ScriptedExecutor([testing.break_outcome()])):
        with pytest.raises(nh.ExecutionError, match=r"outcome 'break' is not allowed for this block"):
            describe(1)


def test_break_and_continue_outcomes_steer_the_loop() -> None:
    @nh.natural_function
    def first_even(numbers: list[int]) -> list[int]:
        seen = []
        for n in numbers:
            """natural
            Skip odd <n>; stop at the first even one.
            """
            seen.append(n)
        return seen

    script = ScriptedExecutor([testing.continue_outcome(), pass_outcome(), testing.break_outcome()])
    with nh.run(script):
        assert first_even([1, 3, 4]) == [3]


# --- outcome factories -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        (testing.pass_outcome, PassOutcome(kind="pass")),
        (testing.break_outcome, BreakOutcome(kind="break")),
        (testing.continue_outcome, ContinueOutcome(kind="continue")),
        (lambda: return_outcome("x + 1"), ReturnOutcome(kind="return", return_expression="x + 1")),
        (lambda: raise_outcome("bad", "KeyError"), RaiseOutcome(kind="raise", raise_message="bad", raise_error_type="KeyError")),
    ],
)
def test_outcome_factory_builds_the_outcome_model(factory, expected) -> None:
    assert factory() == expected


def test_raise_outcome_takes_an_exception_class_by_name() -> None:
    assert raise_outcome("bad", LookupError).raise_error_type == "LookupError"


# --- CallbackExecutor --------------------------------------------------------------------------------


def test_callback_receives_program_text_and_step_locals() -> None:
    seen: list[tuple[str, dict[str, object]]] = []

    def answer(program: str, step_locals: Mapping[str, object]) -> StepResponse:
        seen.append((program, dict(step_locals)))
        return StepResponse(assign={"y": step_locals["x"] * 3})

    with nh.run(CallbackExecutor(answer)):
        assert double(2) == 6
    assert seen == [("Set <:y> to twice <x>.\n", {"x": 2})]


def test_async_callback_is_awaited() -> None:
    async def answer(program: str, step_locals: Mapping[str, object]) -> object:
        await asyncio.sleep(0)
        return return_outcome("'async'")

    with nh.run(CallbackExecutor(answer)):
        assert describe(1) == "async"


def test_callback_returning_none_passes() -> None:
    @nh.natural_function
    def noop() -> str:
        """natural
        Do nothing.
        """
        return "after"

    with nh.run(CallbackExecutor(lambda program, step_locals: None)):
        assert noop() == "after"


def test_callback_step_locals_are_read_only() -> None:
    def answer(program: str, step_locals: Mapping[str, object]) -> None:
        step_locals["y"] = 1  # type: ignore[index]

    with nh.run(CallbackExecutor(answer)):
        with pytest.raises(TypeError, match="does not support item assignment"):
            double(1)


def test_callback_exception_fails_the_block() -> None:
    def answer(program: str, step_locals: Mapping[str, object]) -> None:
        raise ConnectionError("simulated provider outage")

    with nh.run(CallbackExecutor(answer)):
        with pytest.raises(ConnectionError, match="simulated provider outage"):
            double(1)


# --- the real agent on a scripted model --------------------------------------------------------------


def test_agent_executor_runs_function_model_rounds_through_the_agent() -> None:
    model = function_model([("nh_assign", {"target_path": "y", "expression": "x * 2"})], pass_outcome())
    with nh.run(agent_executor(model)):
        assert double(21) == 42


def test_agent_executor_wraps_a_plain_function_in_a_function_model() -> None:
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    def answer(messages, info) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "'fn'"})])

    with nh.run(agent_executor(answer)):
        assert describe(1) == "fn"


def test_agent_executor_runs_test_model() -> None:
    executor = agent_executor(TestModel(call_tools=[], custom_output_args={"kind": "pass"}))
    with nh.run(executor):
        assert describe(1) is None


def test_function_model_asked_past_its_script_names_the_count() -> None:
    with nh.run(agent_executor(function_model(pass_outcome()))):
        describe(1)
        with pytest.raises(AssertionError, match=r"asked for round 2, but only 1 were scripted"):
            describe(1)


def test_function_model_rejects_an_unknown_round_item() -> None:
    with pytest.raises(TypeError, match=r"must be an outcome, a \(tool_name, arguments\) pair"):
        function_model(42)


# --- the documented example --------------------------------------------------------------------------


def test_docs_testing_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert blocks, "docs/testing.md has no python example"
    # A real file, so `inspect.getsource` can read the example's natural functions.
    path = tmp_path / "test_docs_example.py"
    path.write_text(blocks[0], encoding="utf-8")
    spec = importlib.util.spec_from_file_location("test_docs_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [value for name, value in vars(module).items() if name.startswith("test_") and callable(value)]
    assert len(tests) >= 3
    for test in tests:
        test()
