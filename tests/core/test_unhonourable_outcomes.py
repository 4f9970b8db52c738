"""Outcomes and programs that cannot be honoured fail cleanly, with an error that says why."""

from __future__ import annotations

import pytest

import nighthawk as nh
from scripting import finish, scripted_executor


class RateLimited(Exception):
    """An exception whose constructor needs more than a message."""

    def __init__(self, retry_after: float, message: str) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@nh.natural_function
def fetch(error_type: type[Exception]) -> None:
    """natural
    Fetch the data or raise <error_type>.
    """


def test_raise_naming_an_exception_that_needs_more_than_a_message_is_an_execution_error() -> None:
    executor, _ = scripted_executor(
        *[[finish("raise", raise_message="slow down", raise_error_type="RateLimited")]] * 3
    )
    with nh.run(executor), pytest.raises(nh.ExecutionError, match="cannot raise RateLimited with only a message"):
        fetch(RateLimited)


def test_model_told_the_exception_cannot_be_raised_can_choose_another() -> None:
    executor, script = scripted_executor(
        [finish("raise", raise_message="slow down", raise_error_type="RateLimited")],
        [finish("raise", raise_message="slow down", raise_error_type="RuntimeError")],
    )
    with nh.run(executor), pytest.raises(RuntimeError, match="slow down"):
        fetch(RateLimited)
    assert "cannot raise RateLimited with only a message" in str(script.seen[1][-1].parts)


def test_blank_program_is_a_parse_error_at_decoration() -> None:
    with pytest.raises(nh.NaturalParseError, match="the Natural block has no program"):

        @nh.natural_function
        def blank() -> None:
            """natural

            """


def test_frontmatter_only_program_is_a_parse_error_at_decoration() -> None:
    with pytest.raises(nh.NaturalParseError, match="no program after its frontmatter"):

        @nh.natural_function
        def only_frontmatter() -> None:
            """natural
            ---
            deny: [raise]
            ---
            """


def test_empty_interpolated_program_fails_before_any_model_request() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def render(task: str) -> None:
        f"""natural
        {task}
        """

    with nh.run(executor), pytest.raises(nh.NaturalParseError, match="the Natural block has no program"):
        render("   ")
    assert script.requests == 0


def test_tag_like_text_that_is_not_a_variable_raises_name_error_with_an_escape_hint() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def markup() -> None:
        """natural
        Wrap each item in <li> tags.
        """

    with nh.run(executor), pytest.raises(NameError, match=r"escape it as `\\<li>`") as caught:
        markup()
    assert caught.value.name == "li"
    assert script.requests == 0


def test_write_binding_with_a_space_is_a_parse_error() -> None:
    with pytest.raises(nh.NaturalParseError, match=r"`<: total>` has a space after `<:`; write the binding as `<:total>`"):

        @nh.natural_function
        def spaced() -> int:
            total = 0
            """natural
            Set <: total>.
            """
            return total
