"""Scopes as people write them: nested helpers, enclosing variables read at call time, generators."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor


def assign(target: str, expression: str) -> object:
    return call("nh_assign", target_path=target, expression=expression)


def test_natural_docstring_of_a_nested_def_in_a_natural_function_runs_as_a_block() -> None:
    executor, script = scripted_executor([finish("return", return_expression="text.upper()")])

    @nh.natural_function
    def shout_all(texts: list[str]) -> list[str]:
        def shout(text: str) -> str:
            """natural
            Return <text> in capitals.
            """

        return [shout(text) for text in texts]

    with nh.run(executor):
        assert shout_all(["hi"]) == ["HI"]
    assert "Return <text> in capitals." in str(script.seen[0][0].parts[-1].content)


def test_nested_block_reads_the_enclosing_variable_at_call_time() -> None:
    executor, _ = scripted_executor([finish("return", return_expression="[n for n in values if n > limit]")])

    @nh.natural_function
    def keep_large(values: list[int]) -> list[int]:
        limit = 0

        def large() -> list[int]:
            """natural
            Return the items of <values> above <limit>.
            """

        limit = 2
        return large()

    with nh.run(executor):
        assert keep_large([1, 2, 3, 4]) == [3, 4]


def test_helper_defined_before_the_variable_it_reads_resolves_it_when_it_runs() -> None:
    executor, _ = scripted_executor([finish("return", return_expression="len(document.split())")])

    def count_words() -> int:
        @nh.natural_function
        def words() -> int:
            """natural
            Count the words of <document>.
            """

        document = "three short words"
        return words()

    with nh.run(executor):
        assert count_words() == 3


def test_helper_called_before_the_variable_is_assigned_raises_name_error() -> None:
    executor, _ = scripted_executor([finish()])

    def too_early() -> None:
        @nh.natural_function
        def words() -> None:
            """natural
            Count the words of <document>.
            """

        words()
        document = "late"  # noqa: F841 - assigned after the call on purpose

    with nh.run(executor), pytest.raises(NameError, match="cannot access free variable 'document'"):
        too_early()


def test_enclosing_variable_not_assigned_yet_is_not_mistaken_for_text_to_escape() -> None:
    executor, _ = scripted_executor()

    def too_early(helper: str) -> None:
        @nh.natural_function
        def words() -> None:
            """natural
            Count the words of <document>.
            """

        @nh.natural_function
        def words_with_cell() -> None:
            """natural
            Count the words of <document>.
            """
            print(document)  # the body names it too: a closure cell, where `words` reads the frame late

        {"late": words, "cell": words_with_cell}[helper]()
        document = "late"

    for helper in ("late", "cell"):
        with nh.run(executor), pytest.raises(NameError) as caught:
            too_early(helper)
        assert caught.value.name == "document"
        assert "`<document>` in the Natural block names a variable not assigned yet" in str(caught.value)
        assert "escape" not in str(caught.value)


def test_return_outcome_in_an_annotated_generator_ends_the_generator() -> None:
    executor, _ = scripted_executor([finish()], [finish("return", return_expression="None")])

    @nh.natural_function
    def numbers() -> Iterator[int]:
        for n in range(5):
            yield n
            """natural
            Stop once you have seen enough numbers.
            """

    with nh.run(executor):
        assert list(numbers()) == [0, 1]


def test_nested_natural_function_is_compiled_once_and_keeps_each_calls_closure() -> None:
    executor, _ = scripted_executor(
        [finish("return", return_expression="prefix + text")], [finish("return", return_expression="prefix + text")]
    )

    @nh.natural_function
    def labeller(prefix: str):
        def label(text: str) -> str:
            """natural
            Return <text> with <prefix> in front.
            """

        return label

    first, second = labeller("a:"), labeller("b:")
    assert first.__code__ is second.__code__  # parsed and compiled when the first call defined it
    with nh.run(executor):
        assert (first("x"), second("y")) == ("a:x", "b:y")
