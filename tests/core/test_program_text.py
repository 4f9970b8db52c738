"""The program text an executor receives is the block after its `natural` line, dedented, as written.

Only the sentinel line goes and the indentation is normalised; the final newline and any blank lines stay.
The prompt places the program on lines of its own between its markers, so it shows no extra empty line.
"""

from __future__ import annotations

import asyncio

import nighthawk as nh
from nighthawk.answers.outcome import Outcome
from nighthawk.testing import ScriptedExecutor, pass_outcome
from scripting import finish, scripted_executor


class RecordingExecutor:
    """A user's own step executor: it keeps the program text of every step it runs."""

    def __init__(self) -> None:
        self.programs: list[str] = []

    async def run_step(self, step: nh.StepContext) -> Outcome:
        self.programs.append(step.program.text)
        return pass_outcome()


def test_custom_executor_receives_the_docstring_program_with_its_final_newline() -> None:
    @nh.natural_function
    def summarise(notes: list[str]) -> None:
        """natural
        Summarise <notes>.
          Keep it short.
        """

    executor = RecordingExecutor()
    with nh.run(executor):
        summarise(["a"])
    assert executor.programs == ["Summarise <notes>.\n  Keep it short.\n"]


def test_custom_executor_receives_the_inline_program_with_its_final_newline() -> None:
    @nh.natural_function
    def tidy(rows: list[int]) -> None:
        rows.sort()
        """natural
        Look at <rows>.
        """

    executor = RecordingExecutor()
    with nh.run(executor):
        tidy([2, 1])
    assert executor.programs == ["Look at <rows>.\n"]


def test_custom_executor_receives_the_interpolated_fstring_program_with_its_final_newline() -> None:
    @nh.natural_function
    def greet(name: str) -> None:
        f"""natural
        Greet {name}.
        """

    executor = RecordingExecutor()
    with nh.run(executor):
        greet("Ada")
    assert executor.programs == ["Greet Ada.\n"]


def test_async_natural_function_hands_its_program_with_the_final_newline() -> None:
    @nh.natural_function
    async def check(value: int) -> None:
        """natural
        Check <value>.
        """

    executor = RecordingExecutor()
    with nh.run(executor):
        asyncio.run(check(1))
    assert executor.programs == ["Check <value>.\n"]


def test_blank_lines_inside_and_at_the_end_of_the_block_are_kept() -> None:
    @nh.natural_function
    def plan() -> None:
        """natural
        First.

        Second.

        """

    script = ScriptedExecutor([pass_outcome()])
    with nh.run(script):
        plan()
    assert script.calls[0].program == "First.\n\nSecond.\n\n"


def test_frontmatter_is_removed_and_the_rest_kept_with_its_final_newline() -> None:
    @nh.natural_function
    def guarded() -> None:
        """natural
        ---
        deny: [raise]
        ---
        Carry on.
        """

    executor = RecordingExecutor()
    with nh.run(executor):
        guarded()
    assert executor.programs == ["Carry on.\n"]


def test_prompt_shows_the_program_between_its_markers_without_an_empty_line() -> None:
    @nh.natural_function
    def block(x: int) -> None:
        """natural
        Look at <x>.
        """

    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        block(1)
    user = str(script.seen[0][0].parts[-1].content)
    assert user.startswith("<<<NH:PROGRAM>>>\nLook at <x>.\n<<<NH:END_PROGRAM>>>\n")
