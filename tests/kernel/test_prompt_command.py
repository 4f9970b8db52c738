"""`%nighthawk prompt PROGRAM` prints what the next step of a program would send, each part with its tokens
(nighthawk_ipython/_prompt_view.py), without asking the model or touching the namespace."""

from __future__ import annotations

from typing import Any

import pytest
from data_notebook import first_request
from IPython.core.error import UsageError
from pydantic_ai.models.function import FunctionModel

import nighthawk_ipython

PROGRAM = "Keep the <orders> over <threshold> in <:big>; don't bother with # signs."


def never_called(messages: Any, info: Any) -> Any:
    raise AssertionError("the model was asked")


@pytest.fixture
def orders(shell: Any) -> Any:
    shell.user_ns.update(orders=[{"id": i, "total": i * 10.0} for i in range(40)], threshold=120.0)
    nighthawk_ipython.configure(model=FunctionModel(never_called, model_name="never"), shell=shell)
    return shell


def test_the_report_counts_each_part_and_shows_the_prompts(orders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    orders.run_line_magic("nighthawk", f"prompt {PROGRAM}")
    printed = capsys.readouterr().out
    table = printed.split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in table] == ["system", "tool", "PROGRAM", "GLOBALS", "LOCALS", "total"]
    assert all(" tokens" in line for line in table)
    assert '{"name": "nh_outcome"' in printed and "threshold: float = 120.0" in printed
    assert PROGRAM in printed  # the program as written: its quote and `#` are not options or a comment


def test_the_user_prompt_shown_is_the_one_the_step_sends(orders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    orders.run_line_magic("nighthawk", f"prompt {PROGRAM}")
    shown = capsys.readouterr().out.split("--- user prompt", 1)[1].split("\n", 1)[1].rstrip("\n")
    _, sent = first_request(orders, PROGRAM, "--display none")
    assert shown == sent


def test_nothing_is_asked_or_changed(orders: Any) -> None:
    before = dict(orders.user_ns)
    orders.run_line_magic("nighthawk", f"prompt {PROGRAM}")
    assert "big" not in orders.user_ns
    assert {name: orders.user_ns[name] for name in before} == before


def test_a_secret_in_scope_is_masked_as_in_a_real_step(orders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    orders.user_ns["api_key"] = "sk-proj-4hT9mQ2vL8xR1nB6cW3zY7pK5sD0fG"
    orders.run_line_magic("nighthawk", "prompt Call the service with <api_key> for <orders>.")
    printed = capsys.readouterr().out
    assert "sk-proj-4hT9mQ2vL8xR1nB6cW3zY7pK5sD0fG" not in printed
    assert "api_key: str = " in printed


def test_a_program_reading_an_unbound_name_is_a_usage_error(orders: Any) -> None:
    with pytest.raises(UsageError, match="name 'missing' is not defined"):
        orders.run_line_magic("nighthawk", "prompt Sum <missing>.")


def test_no_program_is_a_usage_error(orders: Any) -> None:
    with pytest.raises(UsageError, match="give the program"):
        orders.run_line_magic("nighthawk", "prompt")
