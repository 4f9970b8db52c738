"""Natural block recognition and program parsing (spec sections 6, 7, 8.4 frontmatter)."""

from __future__ import annotations

import pytest

from nighthawk import NaturalParseError
from nighthawk.program.block import parse_program, strip_sentinel


def test_sentinel_line_is_removed_and_program_dedented() -> None:
    assert strip_sentinel("natural\n    Do <x>.\n      keep indent\n") == "Do <x>.\n  keep indent\n"


@pytest.mark.parametrize(
    "literal",
    ["Natural\nDo it.", " natural\nDo it.", "\nnatural\nDo it.", "natural \nDo it.", "natural", "naturally\nx"],
)
def test_literal_without_exact_sentinel_line_is_not_a_block(literal: str) -> None:
    assert strip_sentinel(literal) is None


def test_program_text_keeps_blank_lines_and_final_newline_while_the_prompt_text_drops_the_outer_ones() -> None:
    program = parse_program("\nFirst <x>.\n\nSecond.\n\n")
    assert program.text == "\nFirst <x>.\n\nSecond.\n\n"
    assert program.prompt_text == "First <x>.\n\nSecond."


def test_read_and_write_bindings_are_collected_in_order() -> None:
    program = parse_program("Use <b> and <a>, then <b> again; set <:out> and <:total>.")
    assert program.reads == ("b", "a")
    assert program.writes == ("out", "total")


def test_escaped_binding_is_literal_text_without_backslash() -> None:
    program = parse_program(r"Write the tag \<name> into <:html>.")
    assert program.text == "Write the tag <name> into <:html>."
    assert program.reads == ()
    assert program.references == ()


def test_dotted_reference_is_a_reference_but_not_a_read_binding() -> None:
    program = parse_program("Look at <config.path> and <items>.")
    assert program.reads == ("items",)
    assert program.references == ("config", "items")


def test_write_binding_with_dotted_path_is_rejected() -> None:
    with pytest.raises(NaturalParseError, match=r"write binding `<:a\.b>` must be a plain name"):
        parse_program("Set <:a.b>.", filename="f.py", line=3)


def test_frontmatter_deny_is_parsed_and_stripped() -> None:
    program = parse_program("\n---\ndeny: [raise, return]\n---\nDo <x>.")
    assert program.denied == frozenset({"raise", "return"})
    assert program.text == "Do <x>."


def test_program_without_frontmatter_has_nothing_denied() -> None:
    assert parse_program("Just text.\n---\nnot frontmatter").denied == frozenset()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\ndeny: [pass]\n", "never closed"),
        ("---\n- pass\n---\nx", "must be a YAML mapping"),
        ("---\ndeny: [pass]\nmodel: x\n---\nx", r"unknown frontmatter key\(s\) \['model'\]"),
        ("---\n{}\n---\nx", "must contain `deny`"),
        ("---\ndeny: pass\n---\nx", "`deny` must be a list"),
        ("---\ndeny: [explode]\n---\nx", r"unknown outcome kind\(s\) \['explode'\]"),
        ("---\ndeny: [pass\n---\nx", "not valid YAML"),
        ("--- \ndeny: [pass]\n---\nx", "must be exactly `---`"),
    ],
)
def test_malformed_frontmatter_raises_parse_error(text: str, message: str) -> None:
    with pytest.raises(NaturalParseError, match=message):
        parse_program(text)


def test_parse_error_names_file_and_line() -> None:
    with pytest.raises(NaturalParseError, match=r"^cell\.py:12: ") as info:
        parse_program("\n---\ndeny: [nope]\n---\n", filename="cell.py", line=10)
    assert (info.value.filename, info.value.line) == ("cell.py", 12)
