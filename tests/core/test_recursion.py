"""A natural function that calls itself (or a sibling) by name is ordinary Python recursion."""

from __future__ import annotations

import asyncio

import pytest

import nighthawk as nh
from nighthawk.testing import ScriptedExecutor, return_outcome


def test_recursive_natural_function_inside_an_enclosing_function_recurses_then_runs_its_block() -> None:
    def outer() -> int:
        @nh.natural_function
        def countdown(n: int) -> int:
            if n > 3:
                return countdown(n - 1)
            """natural
            Return <n> times ten.
            """
            return -1

        return countdown(5)

    script = ScriptedExecutor([return_outcome("n * 10")])
    with nh.run(script):
        assert outer() == 30
    assert [call.reads for call in script.calls] == [("n",)]


def test_recursive_async_natural_function_inside_an_enclosing_function_recurses_then_runs_its_block() -> None:
    async def outer() -> int:
        @nh.natural_function
        async def countdown(n: int) -> int:
            if n > 3:
                return await countdown(n - 1)
            """natural
            Return <n> times ten.
            """
            return -1

        return await countdown(5)

    with nh.run(ScriptedExecutor([return_outcome("n * 10")])):
        assert asyncio.run(outer()) == 30


def test_recursive_natural_function_runs_its_block_at_every_level() -> None:
    def outer() -> int:
        @nh.natural_function
        def total(n: int) -> int:
            rest = total(n - 1) if n > 0 else 0
            """natural
            Return <n> plus <rest>.
            """
            return -1

        return total(2)

    script = ScriptedExecutor([return_outcome("n + rest")] * 3)
    with nh.run(script):
        assert outer() == 3
    assert script.remaining == 0


def test_recursive_nested_def_inside_a_natural_function_recurses() -> None:
    @nh.natural_function
    def outer() -> int:
        def countdown(n: int) -> int:
            if n > 3:
                return countdown(n - 1)
            """natural
            Return <n> times ten.
            """
            return -1

        return countdown(5)

    with nh.run(ScriptedExecutor([return_outcome("n * 10")])):
        assert outer() == 30


def test_mutually_recursive_natural_functions_inside_an_enclosing_function_call_each_other() -> None:
    def outer(n: int) -> str:
        @nh.natural_function
        def even(k: int) -> str:
            if k > 0:
                return odd(k - 1)
            """natural
            Return the word even.
            """
            return ""

        @nh.natural_function
        def odd(k: int) -> str:
            if k > 0:
                return even(k - 1)
            """natural
            Return the word odd.
            """
            return ""

        return even(n)

    script = ScriptedExecutor([return_outcome("'even'"), return_outcome("'odd'")])
    with nh.run(script):
        assert outer(4) == "even"
        assert outer(3) == "odd"
    assert script.remaining == 0


@nh.natural_function
def module_countdown(n: int) -> int:
    if n > 3:
        return module_countdown(n - 1)
    """natural
    Return <n> times ten.
    """
    return -1


def test_recursive_module_level_natural_function_recurses_then_runs_its_block() -> None:
    with nh.run(ScriptedExecutor([return_outcome("n * 10")])):
        assert module_countdown(5) == 30


def test_recursive_natural_function_defined_in_a_notebook_cell_recurses() -> None:
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactiveshell.InteractiveShell.instance()
    shell.user_ns["_script"] = ScriptedExecutor([return_outcome("n * 10")])
    definition = shell.run_cell(
        "import nighthawk as nh\n"
        "\n"
        "@nh.natural_function\n"
        "def countdown(n: int) -> int:\n"
        "    if n > 3:\n"
        "        return countdown(n - 1)\n"
        '    """natural\n'
        "    Return <n> times ten.\n"
        '    """\n'
        "    return -1\n"
    )
    definition.raise_error()
    call = shell.run_cell("with nh.run(_script):\n    answer = countdown(5)\n")
    call.raise_error()
    assert shell.user_ns["answer"] == 30
