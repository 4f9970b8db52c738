"""Big containers of numbers neither slow a step's look for secrets nor hide the secrets beside them.

A step looks at a bounded number of values inside what it reads (1,000). Numbers hold no text, so they are
not counted: a list of a million numbers next to a connection's settings leaves the whole look for the
settings, and a password there is masked wherever the step sends it. Texts too long to search are
skipped the same way, and a list of texts the steps of a map read again unchanged is tested once.
"""

from __future__ import annotations

import json

import pytest

import nighthawk as nh
import nighthawk.secrets._values as values_module
from nighthawk.secrets import may_hold_credential
from nighthawk.secrets._scrubber import collect_secret_values
from scripting import call, finish, scripted_executor

# Not named like a credential: a global `PASSWORD` would make it a secret of every step of this module.
CHOSEN = "hunter2-blue-42"
REDACTION = nh.ContextRedaction()


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


# --- big texts, and texts a map's steps read again ------------------------------------------------------


def _joint_tests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the look tests at once for credential shapes, recorded as it passes them."""
    tested: list[str] = []

    def recording(text: str) -> bool:
        tested.append(text)
        return may_hold_credential(text)

    monkeypatch.setattr(values_module, "may_hold_credential", recording)
    return tested


def test_texts_too_long_to_search_are_not_read_by_the_look(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ten pages of logs beside a short note: the pages are skipped as a long text on its own is, so the
    # look reads the note, not the megabytes joined to it.
    tested = _joint_tests(monkeypatch)
    found = collect_secret_values([("data", ["x" * 10**6] * 10 + ["a short note about the run"])], REDACTION)
    assert found == frozenset()
    assert tested and max(map(len, tested)) < 10**6


def test_a_credential_beside_texts_too_long_to_search_is_found() -> None:
    data = ["x" * 10**6] * 10 + [f"conn Server=db;Password={CHOSEN};"]
    assert CHOSEN in collect_secret_values([("data", data)], REDACTION)


def test_an_unchanged_list_of_texts_is_tested_once_across_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _rows()
    tested = _joint_tests(monkeypatch)
    for _ in range(3):
        collect_secret_values([("data", data)], REDACTION)
    assert len(tested) == 1


def test_a_credential_written_into_a_list_already_looked_at_is_masked() -> None:
    # The first step finds no credential in the rows; the second step reads the same list, changed in place.
    data = _rows()
    assert _tool_result(data, "len(data)") == 10**6
    data[500] = f"conn Server=db;Password={CHOSEN};"
    assert CHOSEN[::-1] not in _tool_result(data, "data[len(data) // 2000][::-1]")


def test_a_credential_written_into_a_dict_already_looked_at_is_found() -> None:
    notes = {f"note{i}": f"value number {i} here" for i in range(10**5)}
    assert collect_secret_values([("notes", notes)], REDACTION) == frozenset()
    notes["note7"] = f"sent with Bearer {CHOSEN}Tk4bZ9"
    assert any(CHOSEN in value for value in collect_secret_values([("notes", notes)], REDACTION))
