"""What confirm mode shows before the person answers, read as an attacker would write the call: the code
exactly as it will run, whatever secrets it quotes, however long it is, whatever characters it holds.

Each attack is a call the model makes through one channel (`nh_eval`, the value of `nh_assign`, a return
expression) in a `%%natural --confirm` cell; the person refuses it, so the victim file stays. What counts is
the code the person was shown.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kernel_scripts import assign, outcome, scripted
from pydantic_ai.messages import ToolCallPart

PROMPT = "Run it? [y/N] "
LOOKALIKE_NOTE = "    (a name in lookalike letters: "
CHANNELS = ("nh_eval", "nh_assign", "return")


def model_code(channel: str, expression: str) -> ToolCallPart:
    match channel:
        case "nh_eval":
            return ToolCallPart("nh_eval", {"expression": expression})
        case "nh_assign":
            return assign("result", expression)
    return outcome("return", return_expression=expression)


def as_shown(channel: str, expression: str) -> str:
    """The line the person must read for `expression` sent through `channel`."""
    return {"nh_eval": expression, "nh_assign": f"result = {expression}", "return": f"return {expression}"}[channel]


class Person:
    """Answers the prompts in order (then refuses), and remembers what was printed before each prompt."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.seen_before: list[str] = []

    def __call__(self, prompt: str = "") -> str:
        import sys

        self.prompts.append(prompt)
        self.seen_before.append(sys.stdout.getvalue())  # capture_output's buffer: what was shown so far
        return self.answers.pop(0) if self.answers else "n"


def unfolded(printed: str) -> str:
    """The code of the last call shown in `printed` (what was printed before a prompt), its indentation taken
    off and folded lines joined."""
    lines = printed.split("Nighthawk wants to run")[-1].splitlines()[1:]
    code: list[str] = []
    for line in lines:
        if line.startswith("  ↪ "):
            code[-1] += line[4:]
        elif line.startswith("    (") and line.endswith("looks like a secret)") or line.startswith(LOOKALIKE_NOTE):
            break
        elif line.startswith("    "):
            code.append(line[4:])
    return "\n".join(code)


@pytest.fixture
def confirm(shell: Any, use_model: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Person]:
    """Run a `%%natural --confirm` cell whose model makes `calls` first; the person answers `answers`, then
    refuses. Returns the person, who remembers what was shown before each prompt."""
    from IPython.utils.capture import capture_output

    victim = tmp_path / "keep.txt"
    victim.write_text("precious")
    shell.run_cell(f"import os\np = {str(victim)!r}\nresult = None")

    def run(*calls: ToolCallPart, answers: tuple[str, ...] = (), secret: str | None = None) -> Person:
        if secret is not None:
            shell.user_ns["db_password"] = secret
        person = Person(*answers)
        monkeypatch.setattr("builtins.input", person)
        use_model(scripted(*([call] for call in calls), [outcome("pass")]))
        with capture_output():
            shell.run_cell("%%natural --confirm\nLook at the file <p>; set <:result>.")
        assert victim.read_text() == "precious"
        return person

    return run


# Each spelling, and what the person must read: the code as written, only a string's own text masked.
SPELLINGS = {
    "a credential keyword argument": ("dict(Password=os.remove(p))", "dict(Password=os.remove(p))"),
    "a PEM header next to the call": (
        "('-----BEGIN PRIVATE KEY-----', os.remove(p))",
        "('<masked>', os.remove(p))",
    ),
    "a URL password split around the call": (
        "'ftp://u:'+str(os.remove(p))+'@h'",
        "'ftp://u:'+str(os.remove(p))+'@h'",
    ),
    "a connection string split around the call": (
        "'Server=db;Password=' + str(os.remove(p)) + ';'",
        "'Server=db;Password=' + str(os.remove(p)) + ';'",
    ),
    "an f-string field after a credential word": ("f'password={os.remove(p)}'", "f'password={os.remove(p)}'"),
    "a triple-quoted PEM header": (
        '("""-----BEGIN RSA PRIVATE KEY-----""", os.remove(p))',
        '("""<masked>""", os.remove(p))',
    ),
    "a bytes PEM header": ("(b'-----BEGIN PRIVATE KEY-----', os.remove(p))", "(b'<masked>', os.remove(p))"),
    "an implicit join around a comment": (
        "('password=' # x\n 'abcdefgh1234', os.remove(p))",
        "('<masked>' # x\n '<masked>', os.remove(p))",
    ),
    "a password query parameter filled by the call": (
        "f'https://h/?password={os.remove(p)}'",
        "f'https://h/?password={os.remove(p)}'",
    ),
}


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_the_person_sees_the_whole_call_however_its_strings_look(confirm: Any, channel: str, spelling: str) -> None:
    expression, shown = SPELLINGS[spelling]
    person = confirm(model_code(channel, expression))
    assert person.prompts[0] == PROMPT
    assert unfolded(person.seen_before[0]) == as_shown(channel, shown)


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_secret_quoted_inside_a_string_is_still_masked(confirm: Any, channel: str) -> None:
    expression = "connect('postgres://app:hunter2-blue@db/sales', timeout=os.remove(p))"
    shown = confirm(model_code(channel, expression), secret="hunter2-blue").seen_before[0]
    assert "hunter2-blue" not in shown
    assert unfolded(shown) == as_shown(channel, "connect('postgres://<masked>@db/sales', timeout=os.remove(p))")


@pytest.mark.parametrize("channel", CHANNELS)
def test_the_model_cannot_hide_code_by_making_it_a_secret_first(confirm: Any, channel: str) -> None:
    # The first call plants the text of the second call's code as a value under a credential name.
    plant = ToolCallPart("nh_eval", {"expression": "{'password': 'str(os.remove(p))'}"})
    expression = "print(str(os.remove(p)))"
    person = confirm(plant, model_code(channel, expression), answers=("y",))
    assert len(person.prompts) == 2
    assert unfolded(person.seen_before[1]) == as_shown(channel, expression)


@pytest.mark.parametrize("channel", CHANNELS)
def test_code_past_two_thousand_characters_is_shown_whole_before_the_question(confirm: Any, channel: str) -> None:
    expression = "[" + "0, " * 1_000 + "os.remove(p)][-1]"
    person = confirm(model_code(channel, expression))
    assert person.prompts[0] == PROMPT
    assert unfolded(person.seen_before[-1]) == as_shown(channel, expression)


def test_long_code_is_shown_a_page_at_a_time_and_asked_after_the_last_page(confirm: Any) -> None:
    expression = "(\n" + "0,\n" * 100 + "os.remove(p))"
    person = confirm(model_code("nh_eval", expression), answers=("", ""))
    assert person.prompts[:3] == [f"-- page {n} of 3: Enter shows more, n refuses -- " for n in (1, 2)] + [PROMPT]
    assert unfolded(person.seen_before[2]) == expression


def test_no_at_a_page_refuses_without_showing_the_rest(confirm: Any) -> None:
    expression = "(\n" + "0,\n" * 100 + "os.remove(p))"
    person = confirm(model_code("nh_eval", expression), answers=("n",))
    assert person.prompts[0].startswith("-- page 1 of 3")
    assert PROMPT not in person.prompts
    assert "os.remove(p))" not in person.seen_before[-1]


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_carriage_return_cannot_overwrite_the_call_on_screen(confirm: Any, channel: str) -> None:
    shown = confirm(model_code(channel, "(os.remove(p),\r 'just reading')")).seen_before[0]
    assert "\r" not in shown
    assert unfolded(shown) == as_shown(channel, "(os.remove(p),\n 'just reading')")


@pytest.mark.parametrize("channel", CHANNELS)
def test_terminal_escapes_and_bidi_marks_in_a_string_are_shown_not_obeyed(confirm: Any, channel: str) -> None:
    shown = confirm(model_code(channel, "(os.remove(p), '\x1b[1A\x1b[2K\u202eharmless')")).seen_before[0]
    assert "\x1b" not in shown and "\u202e" not in shown
    assert unfolded(shown) == as_shown(channel, "(os.remove(p), '<U+001B>[1A<U+001B>[2K<U+202E>harmless')")


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_string_of_code_for_exec_is_shown_as_code(confirm: Any, channel: str) -> None:
    expression = "exec('Password=os.remove(p)')"
    assert unfolded(confirm(model_code(channel, expression)).seen_before[0]) == as_shown(channel, expression)


def test_a_masked_string_is_said_to_be_masked(confirm: Any) -> None:
    printed = confirm(model_code("nh_eval", "len('sk-proj-abcdefghijklmnopqrstuvwxyz012345')")).seen_before[0]
    assert "    len('<masked>')\n    (<masked> stands for text inside a string literal that looks like a secret)" in printed


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_planted_secret_cannot_hide_which_function_getattr_calls(confirm: Any, channel: str) -> None:
    plant = ToolCallPart("nh_eval", {"expression": "{'password': '__import__'}"})
    expression = "getattr(__builtins__, '__import__')('os').remove(p)"
    person = confirm(plant, model_code(channel, expression), answers=("y",))
    assert unfolded(person.seen_before[1]) == as_shown(channel, expression)


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_invisible_name_is_shown(confirm: Any, channel: str) -> None:
    # U+3164 is a letter Python takes in a name (read as U+1160), and it prints as blank space.
    shown = confirm(model_code(channel, "(\u3164 := os.remove)")).seen_before[0]
    assert unfolded(shown) == as_shown(channel, "(<U+1160> := os.remove)")


# Python reads a name in its NFKC form: each of these runs `os.remove(p)`.
LOOKALIKES = {
    "full-width letters": "ｏｓ.ｒｅｍｏｖｅ(p)",
    "mathematical bold letters": "𝐨𝐬.𝐫𝐞𝐦𝐨𝐯𝐞(p)",
    "mathematical monospace letters": "𝚘𝚜.𝚛𝚎𝚖𝚘𝚟𝚎(p)",
    "one folded letter in each name": "oｓ.remoｖe(p)",
}


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("spelling", sorted(LOOKALIKES))
def test_a_name_in_lookalike_letters_is_shown_as_python_reads_it(confirm: Any, channel: str, spelling: str) -> None:
    printed = confirm(model_code(channel, LOOKALIKES[spelling])).seen_before[0]
    assert unfolded(printed) == as_shown(channel, "os.remove(p)")
    assert f"{LOOKALIKE_NOTE}{LOOKALIKES[spelling].partition('.')[2][:-3]} is read as remove)" in printed


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_name_that_mixes_scripts_shows_its_foreign_letters(confirm: Any, channel: str) -> None:
    # A Cyrillic `е` in `remove`: another name, one the model's code may have bound to anything.
    printed = confirm(model_code(channel, "os.r\u0435move(p) or os.remove")).seen_before[0]
    assert unfolded(printed) == as_shown(channel, "os.r<U+0435>move(p) or os.remove")
    assert f"{LOOKALIKE_NOTE}r<U+0435>move mixes scripts (CYRILLIC, LATIN)" in printed


def test_a_literal_that_calls_a_builtin_the_step_rebound_is_asked(confirm: Any) -> None:
    rebind = assign("set", "__import__('functools').partial(os.remove, p)")
    person = confirm(rebind, outcome("return", return_expression="set()"), answers=("y",))
    assert len(person.prompts) == 2
    assert unfolded(person.seen_before[1]) == "return set()"


def test_a_user_tools_arguments_are_masked_only_inside_their_strings() -> None:
    from nighthawk.oversight import ToolCall
    from nighthawk.step._context import ExecutionContext
    from nighthawk_ipython._confirm import describe

    call = ToolCall(
        tool_name="upload",
        argument_name_to_value={"path": "/tmp/report.csv", "note": "Password=x1y2z3w4v5; then delete", "count": 3},
        step_id="In[1]:1",
        execution_context=ExecutionContext(run_id="run", scope_id="scope"),
        processed_natural_program="",
        step_locals={},
        step_globals={},
    )
    assert describe(call) == "upload(path='/tmp/report.csv', note='Password=<masked>; then delete', count=3)"
