"""A return expression is model-written code like `nh_eval`: the tool-call hooks in force see it first, as a
call of `nh_outcome`, and a rejection evaluates nothing and commits nothing.

Each test runs with both kinds of executor: a scripted pydantic-ai model (the outcome is resolved while the
model's answer is checked) and the offline `ScriptedExecutor` (the runner resolves it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nighthawk as nh
from nighthawk.testing import ScriptedExecutor, StepResponse, return_outcome
from scripting import finish, scripted_executor

EXECUTORS = ("agent", "scripted")


def executor_returning(kind: str, expression: str) -> Any:
    """An executor whose one step ends with `{"kind": "return", "return_expression": expression}`."""
    if kind == "agent":
        executor, _ = scripted_executor([finish("return", return_expression=expression)])
        return executor
    return ScriptedExecutor([StepResponse(outcome=return_outcome(expression))])


@nh.natural_function
def tidy(p: str) -> object:
    """natural
    Tidy up <p> and return what happened.
    """


def run_tidy(kind: str, expression: str, victim: Path, oversight: nh.oversight.Oversight) -> object:
    with nh.run(executor_returning(kind, expression)), nh.scope(oversight=oversight):
        return tidy(str(victim))


def tool_hook(decide: Callable[[Any], Any]) -> nh.oversight.Oversight:
    return nh.oversight.Oversight(inspect_tool_call=decide, name="guard")


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "keep.txt"
    path.write_text("precious")
    return path


@pytest.mark.parametrize("kind", EXECUTORS)
def test_a_tool_call_hook_sees_a_return_expression_as_a_call_of_nh_outcome(kind: str, victim: Path) -> None:
    seen: list[Any] = []

    def record(call: Any) -> Any:
        seen.append(call)
        return nh.oversight.Accept()

    assert run_tidy(kind, "len(p) * 0", victim, tool_hook(record)) == 0
    (call,) = seen
    assert call.tool_name == "nh_outcome"
    assert dict(call.argument_name_to_value) == {"kind": "return", "return_expression": "len(p) * 0"}
    assert call.step_locals["p"] == str(victim)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_a_rejected_return_expression_is_not_evaluated_and_the_file_stays(kind: str, victim: Path) -> None:
    with pytest.raises(nh.oversight.OversightRejectedError) as raised:
        run_tidy(kind, "os.remove(p)", victim, tool_hook(lambda call: nh.oversight.Reject("no deleting")))
    assert victim.read_text() == "precious"
    assert raised.match(
        r"^guard rejected the return expression 'os.remove\(p\)' at [\w.]*test_return_oversight:\d+: no deleting; "
        r"it was not evaluated, and the block has no write binding to commit; changes made in place to objects "
        r"\(such as `items.append\(...\)`\) are not undone$"
    )


@pytest.mark.parametrize("kind", EXECUTORS)
def test_read_only_refuses_a_return_expression_that_deletes(kind: str, victim: Path) -> None:
    with pytest.raises(nh.oversight.OversightRejectedError, match=r"read_only rejected the return expression 'os.remove\(p\)'"):
        run_tidy(kind, "os.remove(p)", victim, nh.oversight.read_only())
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("kind", EXECUTORS)
def test_read_only_lets_a_reading_return_expression_run(kind: str, victim: Path) -> None:
    assert run_tidy(kind, "open(p).read()", victim, nh.oversight.read_only()) == "precious"


@pytest.mark.parametrize("kind", EXECUTORS)
def test_allow_tools_without_nh_eval_refuses_a_return_expression_and_says_how_to_allow_it(kind: str, victim: Path) -> None:
    with pytest.raises(nh.oversight.OversightRejectedError, match=r"name 'nh_outcome' \(or 'nh_eval'\) in `allow_tools\(...\)`"):
        run_tidy(kind, "os.remove(p)", victim, nh.oversight.allow_tools("nh_assign"))
    assert victim.exists()


@pytest.mark.parametrize("allowed", [("nh_eval",), ("nh_outcome",)])
def test_allow_tools_lets_a_return_expression_run_with_nh_eval_or_nh_outcome(allowed: tuple[str, ...], victim: Path) -> None:
    assert run_tidy("agent", "len(p) * 0", victim, nh.oversight.allow_tools(*allowed)) == 0


def test_the_rejection_is_recorded_as_an_oversight_decision_on_nh_outcome(victim: Path) -> None:
    from nighthawk import events

    seen: list[Any] = []
    with events.listen(seen.append), pytest.raises(nh.oversight.OversightRejectedError):
        run_tidy("agent", "os.remove(p)", victim, tool_hook(lambda call: nh.oversight.Reject("no deleting")))
    (decision,) = [event for event in seen if isinstance(event, events.OversightDecision)]
    assert (decision.hook, decision.oversight, decision.decision, decision.reason, decision.tool_name) == (
        "inspect_tool_call", "guard", "rejected", "no deleting", "nh_outcome"
    )
