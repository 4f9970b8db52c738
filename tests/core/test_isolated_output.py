"""What the model's code prints in an isolated step reaches the process's own standard output and error, as
it would had the code run there: `print`, a write to `sys.stderr`, a process it starts, in the order of the
calls; a flood is cut, and says so."""

from __future__ import annotations

import io
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


def test_a_character_the_stream_cannot_encode_is_escaped_and_the_step_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    run_isolated("print('café')")
    ascii_out.flush()
    assert ascii_out.buffer.getvalue() == b"caf\\xe9\n"  # type: ignore[attr-defined]


class Terminal(io.StringIO):
    """Standard output as a terminal: it would act on the escape sequences written to it."""

    def isatty(self) -> bool:
        return True


ESCAPES = r"print('\x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b[8mhidden\x1b[0m\r\x1b[2K[nighthawk] step committed')"


def test_escape_sequences_the_child_prints_reach_a_terminal_written_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # Clear the screen, set the clipboard (OSC 52), hide text, erase the line and print a line of our own.
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    run_isolated(ESCAPES)
    shown = terminal.getvalue()
    assert "\x07" not in shown
    assert shown == "<U+001B>[2J<U+001B>]52;c;ZXZpbA==<U+0007><U+001B>[8mhidden\x1b[0m\r<U+001B>[2K[nighthawk] step committed\n"


def test_colours_and_carriage_returns_reach_a_terminal_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    # A coloured log line and a progress bar redrawn on its line: what a terminal user expects to see.
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    run_isolated(r"print('\x1b[1;31mred\x1b[0m 50%\r100%')")
    assert terminal.getvalue() == "\x1b[1;31mred\x1b[0m 50%\r100%\n"


def test_a_notebooks_output_gets_what_the_child_printed_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    # Not a terminal (a notebook's stream, a file): colours and all reach it as text, and act on nothing.
    run_isolated(r"print('\x1b[31mred\x1b[0m', end='\r\n')")
    assert capsys.readouterr().out == "\x1b[31mred\x1b[0m\r\n"


# --- a call whose child ends before it answers ----------------------------------------------------------


def test_what_a_call_printed_before_its_child_exited_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(nh.errors.IsolationError, match="exited with status 3"):
        run_isolated("(print('last words'), print('on stderr', file=__import__('sys').stderr), __import__('os')._exit(3))")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("last words\n", "on stderr\n")


def test_what_a_call_printed_before_its_child_crashed_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(nh.errors.IsolationError, match="crashed"):
        run_isolated("print('before the crash') or __import__('ctypes').string_at(0)")
    assert capsys.readouterr().out == "before the crash\n"


def test_what_a_call_printed_before_the_budget_killed_its_child_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    executor, _ = scripted_executor(
        [call("nh_eval", expression="[print(f'round {n}') or __import__('time').sleep(0.2) for n in range(300)]")],
        step_budget=nh.UsageBudget(wall_time_s=1.5),
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        with pytest.raises(nh.BudgetExceededError):
            look()
    assert capsys.readouterr().out.startswith("round 0\nround 1\nround 2\n")


def test_output_earlier_calls_showed_is_not_shown_again_when_a_later_child_ends(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(nh.errors.IsolationError, match="exited with status 4"):
        run_isolated("print('first call')", "(print('second call'), __import__('os')._exit(4))")
    assert capsys.readouterr().out == "first call\nsecond call\n"


def test_a_stream_that_fails_its_own_way_leaves_the_steps_error_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    class Refusing(io.StringIO):
        def write(self, text: str) -> int:
            raise RuntimeError("this stream takes nothing")

    monkeypatch.setattr(sys, "stdout", Refusing())
    with pytest.raises(nh.errors.IsolationError, match="exited with status 3 .* nh_eval"):
        run_isolated("(print('lost'), __import__('os')._exit(3))")


def test_a_model_that_swaps_its_output_file_for_a_fifo_does_not_hang_the_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    swap = (
        "(__import__('os').unlink(__import__('os').environ['TMPDIR'] + '/stdout'), "
        "__import__('os').mkfifo(__import__('os').environ['TMPDIR'] + '/stdout'), "
        "print('still shown'), __import__('os')._exit(5))"
    )
    with pytest.raises(nh.errors.IsolationError, match="exited with status 5"):
        run_isolated(swap)
    assert capsys.readouterr().out == "still shown\n"


# --- a child that sends output messages of its own --------------------------------------------------------

CHANNEL = (
    "[f for f in range(3, 256) if __import__('os').path.exists(f'/proc/self/fd/{f}') "
    "and __import__('stat').S_ISSOCK(__import__('os').stat(f'/proc/self/fd/{f}').st_mode)][0]"
)


def sent(message: str) -> str:
    """An expression that writes `message` (a Python literal) on the child's channel as the kernel frames it."""
    return f"__import__('os').write({CHANNEL}, __import__('nighthawk.oversight.isolation._channel', fromlist=['frame']).frame({message}))"


def test_a_second_output_message_in_one_call_ends_the_child(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(nh.errors.IsolationError, match="answered nonsense"):
        run_isolated("[" + sent("('output', 'one' + chr(10), '')") + " for _ in range(2)]")
    assert capsys.readouterr().out == "one\n"


def test_an_output_message_over_the_limit_is_cut_in_the_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    run_isolated(sent("('output', 'y' * 3_000_000, '')"))
    out = capsys.readouterr().out
    assert out.startswith("y" * 1000)
    assert len(out) < 1_100_000
    assert out.endswith("[the isolated child sent more, not shown]\n")
