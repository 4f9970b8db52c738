"""Secrets masked in code shown to a person (confirm mode's view): only the text inside string literals
is ever masked, however the literal is spelled, and code that hides behind a string's quotes is shown."""

from __future__ import annotations

import pytest
from nighthawk.secrets._code import mask_code_strings
from nighthawk.secrets._scrubber import SecretScrubber
from nighthawk.transcript._unseen import visible_controls

SECRET = "hunter2-blue"


def shown(code: str) -> str:
    scrubber = SecretScrubber(values=[SECRET])
    return mask_code_strings(code, scrubber.scrub, "<masked>")


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("login('hunter2-blue')", "login('<masked>')"),
        ('login("""hunter2-blue""")', 'login("""<masked>""")'),
        ("login(b'hunter2-blue')", "login(b'<masked>')"),
        ("login(rb'hunter2-blue')", "login(rb'<masked>')"),
        ("login(f'{user}:hunter2-blue')", "login(f'{user}:<masked>')"),
        ("connect(f'postgres://u:hunter2-blue@{host}/db')", "connect(f'postgres://<masked>@{host}/db')"),
    ],
)
def test_a_secret_inside_any_kind_of_literal_is_masked(code: str, expected: str) -> None:
    assert shown(code) == expected


def test_a_secret_split_by_an_implicit_join_masks_every_piece() -> None:
    assert shown("login('hunt' 'er2-' 'blue')") == "login('<masked>' '<masked>' '<masked>')"


def test_a_secret_spelled_with_escapes_masks_the_literal() -> None:
    assert shown(r"login('\x68unter2\x2dblue')") == "login('<masked>')"


@pytest.mark.parametrize(
    "code",
    [
        r"f'\{os.remove(p)}hunter2-blue'",  # a backslash before `{` still opens a field
        r"f'\\{os.remove(p)}'",
        "f'{os.remove(p)!r:>{width}}'",
        "f'{x:{\"}\"}} os.remove(p)'",
    ],
)
def test_an_f_string_field_is_never_taken_for_text(code: str) -> None:
    assert "os.remove(p)" in shown(code)


def test_an_f_string_named_escape_is_text() -> None:
    assert shown(r"f'\N{BULLET} hunter2-blue {x}'") == r"f'\N{BULLET} <masked> {x}'"


def test_code_that_does_not_parse_is_masked_only_inside_what_the_tokenizer_calls_strings() -> None:
    assert shown("(login('hunter2-blue'), os.remove(p)") == "(login('<masked>'), os.remove(p)"


def test_an_unterminated_string_is_shown_as_written() -> None:
    assert shown("os.remove(p) or 'hunter2-blue") == "os.remove(p) or 'hunter2-blue"


def test_a_carriage_return_is_a_line_break_as_python_reads_it() -> None:
    assert shown("(os.remove(p),\r'x')") == "(os.remove(p),\n'x')"


def test_a_string_of_code_keeps_its_code_and_masks_its_own_strings() -> None:
    assert shown("exec(\"login('hunter2-blue'); os.remove(p)\")") == "exec(\"login('<masked>'); os.remove(p)\")"


def test_control_and_invisible_characters_are_shown_by_code_point() -> None:
    assert visible_controls("a\x1b[2K\u200b\u3164\tb\n") == "a<U+001B>[2K<U+200B><U+3164>\tb\n"
