"""Big containers of numbers neither slow a step's look for secrets nor hide the secrets beside them.

A step looks at a bounded number of values inside what it reads (1,000). Numbers hold no text, so they are
not counted: a list of a million numbers next to a connection's settings leaves the whole look for the
settings, and a password there is masked wherever the step sends it.
"""

from __future__ import annotations

import json

import nighthawk as nh
from scripting import call, finish, scripted_executor

# Not named like a credential: a global `PASSWORD` would make it a secret of every step of this module.
CHOSEN = "hunter2-blue-42"


@nh.natural_function
def summarise(data: object) -> None:
    """natural
    Summarise <data>.
    """


def _tool_result(data: object, expression: str) -> str:
    executor, script = scripted_executor([call("nh_eval", expression=expression)], [finish()])
    with nh.run(executor):
        summarise(data)
    (result,) = script.last_tool_results()
    return json.loads(result)["value"]


def test_a_password_after_a_million_numbers_is_masked() -> None:
    data = [list(range(10**6)), {"host": "db", "password": CHOSEN}]
    # An index the look cannot follow (not a constant), so only the look at the start of the step finds it.
    assert _tool_result(data, "str(data[len(data) - 1])") == "{'host': 'db', 'password': '<masked>'}"


def test_a_password_beside_a_big_array_of_readings_is_masked() -> None:
    data = {"readings": [0.5] * 10**5, "ids": tuple(range(10**5)), "connection": {"user": "app", "password": CHOSEN}}
    assert CHOSEN not in _tool_result(data, "repr(list(data.values())[-1])")


def _rows() -> list[str]:
    return [f"row {i} of the table, with a few words" for i in range(10**6)]


def test_a_credential_among_a_million_texts_is_masked_in_what_is_derived_from_it() -> None:
    # Reversed, the text has no shape left: only the value found when the step started masks it.
    data = _rows()
    data[500] = f"conn Server=db;Password={CHOSEN};"
    assert CHOSEN[::-1] not in _tool_result(data, "data[len(data) // 2000][::-1]")


def test_a_bearer_token_among_a_million_texts_is_masked_in_what_is_derived_from_it() -> None:
    data = _rows()
    data[500] = "sent with Bearer Tk4bZ9qX1mN7wR2s"
    assert "Tk4bZ9qX1mN7wR2s"[::-1] not in _tool_result(data, "data[len(data) // 2000][::-1]")


def test_a_password_under_its_key_among_many_plain_texts_is_masked() -> None:
    data = {"password": CHOSEN, **{f"note{i}": f"value number {i} here" for i in range(10**5)}}
    assert CHOSEN[::-1] not in _tool_result(data, "list(data.values())[len(data) // 10**9][::-1]")
