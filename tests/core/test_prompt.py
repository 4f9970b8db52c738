"""What the model is shown in its first request: sections, summaries, bounds and masking."""

from __future__ import annotations

import pytest

import nighthawk as nh
from scripting import finish, scripted_executor

OPENAI_KEY = "sk-proj-" + "Q1w2E3r4" * 6
GLOBAL_SETTING = {"retries": 3}
UNREFERENCED_GLOBAL = "should not appear"


def first_prompt(function, *args) -> tuple[str, str]:
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        function(*args)
    request = script.seen[0][0]
    return request.instructions, str(request.parts[-1].content)


def test_user_prompt_puts_the_shared_sections_before_the_locals() -> None:
    @nh.natural_function
    def block(x: int) -> None:
        """natural
        Look at <x>.
        """

    _, user = first_prompt(block, 1)
    # Program and globals are the same for every call of the function; the locals change: they come last.
    markers = ["<<<NH:PROGRAM>>>", "<<<NH:END_PROGRAM>>>", "<<<NH:GLOBALS>>>", "<<<NH:END_GLOBALS>>>", "<<<NH:LOCALS>>>", "<<<NH:END_LOCALS>>>"]
    positions = [user.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert "Look at <x>." in user


def test_globals_summary_lists_only_referenced_globals() -> None:
    @nh.natural_function
    def block() -> None:
        """natural
        Use <GLOBAL_SETTING.retries>.
        """

    _, user = first_prompt(block)
    globals_section = user.split("<<<NH:GLOBALS>>>")[1]
    assert 'GLOBAL_SETTING: dict = {"retries":3}' in globals_section
    assert "UNREFERENCED_GLOBAL" not in user


def test_secret_names_and_credential_values_never_reach_the_prompt() -> None:
    @nh.natural_function
    def block(api_key: str, note: str) -> None:
        """natural
        Summarise <note>.
        """

    _, user = first_prompt(block, "hunter2-very-secret", f"the key is {OPENAI_KEY}")
    assert "hunter2-very-secret" not in user
    assert OPENAI_KEY not in user
    assert 'api_key: str = "<masked>"' in user


def test_allow_list_unmasks_a_name_the_user_trusts() -> None:
    redaction = nh.ContextRedaction(allow_names=("sort_key",))
    executor, script = scripted_executor([finish()], context_redaction=redaction)

    @nh.natural_function
    def block(sort_key: str) -> None:
        """natural
        Sort by <sort_key>.
        """

    with nh.run(executor):
        block("price")
    assert 'sort_key: str = "price"' in str(script.seen[0][0].parts[-1].content)


@pytest.mark.parametrize(
    "factory",
    [
        lambda: list(range(10**6)),
        lambda: {i: i for i in range(10**5)},
        lambda: "x" * (100 * 10**6),
        lambda: b"\x00" * (10 * 10**6),
    ],
    ids=["list-1e6", "dict-1e5", "str-100MB", "bytes-10MB"],
)
def test_prompt_stays_small_whatever_the_size_of_values_in_scope(factory) -> None:
    big = factory()

    @nh.natural_function
    def block(big: object) -> None:
        """natural
        Describe <big>.
        """

    _, user = first_prompt(block, big)
    assert len(user) < 2_000


def test_callable_binding_is_shown_as_its_signature() -> None:
    def add_tax(amount: float, rate: float = 0.2) -> float:
        """Add sales tax to an amount."""
        return amount * (1 + rate)

    @nh.natural_function
    def block(add_tax: object) -> None:
        """natural
        Use <add_tax>.
        """

    _, user = first_prompt(block, add_tax)
    assert "add_tax: (amount: float, rate: float = 0.2) -> float  # intent: Add sales tax to an amount." in user


def test_system_prompt_is_the_same_for_steps_with_different_outcomes() -> None:
    @nh.natural_function
    def narrowed() -> None:
        """natural
        ---
        deny: [raise]
        ---
        Do it.
        """

    @nh.natural_function
    def in_loop(items: list[int]) -> None:
        for item in items:
            """natural
            Look at <item>.
            """

    assert first_prompt(narrowed)[0] == first_prompt(in_loop, [1])[0]
