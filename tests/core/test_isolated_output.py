"""What the model's code prints in an isolated step reaches the process's own standard output and error, as
it would had the code run there: `print`, a write to `sys.stderr`, a process it starts, in the order of the
calls; a flood is cut, and says so."""

from __future__ import annotations

import sys

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")


@nh.natural_function
def look() -> object:
    result = None
    """natural
    Look around; set <:result>.
    """
    return result


def run_isolated(*expressions: str) -> None:
    """Evaluate each expression in turn, in one isolated step, then return `result`."""
    executor, _ = scripted_executor(
        *([call("nh_eval", expression=expression)] for expression in expressions),
        [finish("return", return_expression="result")],
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        look()


def test_a_print_in_an_isolated_step_reaches_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    run_isolated("print('hello from the child')")
    assert capsys.readouterr().out == "hello from the child\n"


def test_a_write_to_stderr_in_an_isolated_step_reaches_standard_error(capsys: pytest.CaptureFixture[str]) -> None:
    run_isolated("print('careful', file=__import__('sys').stderr)")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "careful\n")


def test_what_a_process_the_models_code_starts_prints_reaches_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    run_isolated("__import__('subprocess').run(['echo', 'from a subprocess']).returncode")
    assert capsys.readouterr().out == "from a subprocess\n"


def test_the_prints_of_a_steps_calls_arrive_in_their_order(capsys: pytest.CaptureFixture[str]) -> None:
    run_isolated("print('one')", "print('two')", "print('three')")
    assert capsys.readouterr().out == "one\ntwo\nthree\n"


def test_what_an_expression_printed_before_it_failed_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    run_isolated("(print('before the error'), 1 / 0)")
    assert capsys.readouterr().out == "before the error\n"


def test_a_flood_of_output_is_cut_and_says_how_much_was_not_shown(capsys: pytest.CaptureFixture[str]) -> None:
    run_isolated("print('x' * 3_000_000)")
    out = capsys.readouterr().out
    assert out.startswith("x" * 1000)
    assert len(out) < 1_100_000
    assert "1,951,425 more bytes printed in the isolated child, not shown" in out
