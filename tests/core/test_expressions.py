"""Expressions as models write them: top-level `await`, and warnings returned instead of printed."""

from __future__ import annotations

import asyncio
import json
import warnings

import pandas as pd

import nighthawk as nh
from scripting import call, finish, scripted_executor


def assign(target: str, expression: str) -> object:
    return call("nh_assign", target_path=target, expression=expression)


def evaluate(expression: str) -> object:
    return call("nh_eval", expression=expression)


async def double(value: int) -> int:
    await asyncio.sleep(0)
    return value * 2


@nh.natural_function
async def compute(double: object) -> int:
    result = 0
    """natural
    Use <double> to set <:result>, then return it.
    """
    return result


def run_async(executor: nh.AgentStepExecutor) -> int:
    async def main() -> int:
        with nh.run(executor):
            return await compute(double)

    return asyncio.run(main())


def test_await_inside_nh_eval_returns_the_awaited_value() -> None:
    executor, script = scripted_executor([evaluate("(await double(2)) + 1")], [finish()])
    run_async(executor)
    assert script.last_tool_results() == ['{"value": 5, "error": null}']


def test_await_inside_nh_assign_commits_the_awaited_value() -> None:
    executor, _ = scripted_executor([assign("result", "await double(21)"), finish()])
    assert run_async(executor) == 42


def test_await_inside_return_expression_returns_the_awaited_value() -> None:
    executor, _ = scripted_executor([finish("return", return_expression="[await double(n) for n in (1, 2)][-1]")])
    assert run_async(executor) == 4


def test_walrus_after_an_await_is_committed() -> None:
    executor, _ = scripted_executor([evaluate("(result := await double(5))"), finish()])
    assert run_async(executor) == 10


def test_warning_raised_while_evaluating_is_returned_to_the_model_not_printed() -> None:
    executor, script = scripted_executor([evaluate("setattr(frame, 'extra', [1]) or len(frame)")], [finish()])

    @nh.natural_function
    def touch(frame: pd.DataFrame) -> None:
        """natural
        Add a column to <frame>.
        """

    with warnings.catch_warnings(record=True) as printed, nh.run(executor):
        warnings.simplefilter("always")
        touch(pd.DataFrame({"a": [1]}))
    envelope = json.loads(script.last_tool_results()[0])
    assert envelope["value"] == 1
    assert any("Pandas doesn't allow columns to be created via a new attribute name" in w for w in envelope["warnings"])
    assert not [w for w in printed if "Pandas doesn't allow columns" in str(w.message)]


def test_warning_the_user_turned_into_an_error_still_fails_the_call() -> None:
    executor, script = scripted_executor([evaluate("setattr(frame, 'extra', [1]) or len(frame)")], [finish()])

    @nh.natural_function
    def touch(frame: pd.DataFrame) -> None:
        """natural
        Add a column to <frame>.
        """

    with warnings.catch_warnings(), nh.run(executor):
        warnings.simplefilter("error")
        touch(pd.DataFrame({"a": [1]}))
    error = json.loads(script.last_tool_results()[0])["error"]
    assert error["kind"] == "execution"
    assert error["message"].startswith("UserWarning: Pandas doesn't allow columns")
