"""Secrets in pandas tables, seen from a notebook user's side: the cells of a credential-named column are
masked in the prompt and in tool results, its dtype stays visible, and ordinary analytics data (serial
identifiers, hyphenated words) is not masked."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import nighthawk as nh
from nighthawk.redaction import looks_ordinary
from scripting import call, finish, scripted_executor

# Not under a credential name: a credential-named global of this module would be masked anyway.
HIDDEN = ["hunter2-blue-42", "Tr0ub4dor&3x"]


def users() -> pd.DataFrame:
    return pd.DataFrame({"name": ["ann", "bob"], "password": HIDDEN})


@nh.natural_function
def look(table: pd.DataFrame) -> None:
    """natural
    Look at <table>.
    """


@nh.natural_function
def look_at_nothing(table: pd.DataFrame) -> None:
    """natural
    Say hello.
    """


def run(block, table: pd.DataFrame, *expressions: str) -> tuple[str, list[str]]:
    """Run `block` on `table` with a model that evaluates `expressions`; the first prompt and the tool results."""
    executor, script = scripted_executor([call("nh_eval", expression=e) for e in expressions], [finish()])
    with nh.run(executor):
        block(table)
    prompt = "".join(str(part.content) for part in script.seen[0][-1].parts if part.part_kind == "user-prompt")
    return prompt, script.last_tool_results()


def value_of(result: str) -> object:
    return json.loads(result)["value"]


def test_a_password_column_keeps_its_dtype_in_the_prompt() -> None:
    prompt, _ = run(look, users(), "1")
    dtype = str(users().dtypes["password"])  # `object` or `str`, by pandas version
    assert f'"columns":{{"name":"{dtype}","password":"{dtype}"}}' in prompt


def test_the_cells_of_a_password_column_are_masked_in_the_prompt() -> None:
    prompt, _ = run(look, users(), "1")
    assert '"rows":[["ann","<masked>"],["bob","<masked>"]]' in prompt


def test_to_string_of_a_table_the_block_reads_is_masked_in_a_tool_result() -> None:
    _, (result,) = run(look, users(), "table.to_string()")
    assert not any(password in result for password in HIDDEN)
    assert result.count("<masked>") == 2 and "ann" in result


def test_to_string_of_a_table_an_expression_names_is_masked_in_a_tool_result() -> None:
    _, (result,) = run(look_at_nothing, users(), "table.to_string()")
    assert not any(password in result for password in HIDDEN) and result.count("<masked>") == 2


def test_a_series_named_password_is_masked_in_a_tool_result() -> None:
    _, (result,) = run(look_at_nothing, users(), "table.iloc[:, 1].to_string()")
    assert not any(password in result for password in HIDDEN) and result.count("<masked>") == 2


def test_only_the_leading_cells_of_a_long_password_column_are_masked_everywhere() -> None:
    table = pd.DataFrame({"password": [f"Zq{i}x!Lm{i}#w" for i in range(1_000)]})
    _, (head, tail) = run(look_at_nothing, table, "table.password.iloc[0]", "table.password.iloc[999]")
    assert value_of(head) == "<masked>" and value_of(tail) == "Zq999x!Lm999#w"


def test_session_ids_of_a_clicks_table_reach_the_model_in_a_list() -> None:
    clicks = pd.DataFrame({"session_id": [f"s-{i:06d}" for i in range(1_000)], "n": range(1_000)})
    _, (_, listed) = run(look, clicks, "table.head(3).to_dict('records')", "table.session_id.tolist()[:3]")
    assert value_of(listed) == ["s-000000", "s-000001", "s-000002"]


def test_session_ids_of_a_clicks_table_are_shown_in_the_prompt() -> None:
    clicks = pd.DataFrame({"session_id": [f"s-{i:06d}" for i in range(1_000)], "n": range(1_000)})
    prompt, _ = run(look, clicks, "1")
    assert '["s-000000",0]' in prompt


def test_a_hyphenated_word_in_a_token_column_reaches_the_model() -> None:
    words = pd.DataFrame({"token": ["The", "quick", "brown-fox", "jumps"]})
    _, (listed, again) = run(look, words, "table.token.tolist()[:4]", "'a brown-fox'")
    assert value_of(listed) == ["The", "quick", "brown-fox", "jumps"] and value_of(again) == "a brown-fox"


@pytest.mark.parametrize("text", ["s-000123", "user_42", "order-2024-001", "brown-fox", "New York", "read.only", "aaaa-aaaa"])
def test_serial_identifiers_and_short_phrases_are_ordinary_text(text: str) -> None:
    assert looks_ordinary(text)


@pytest.mark.parametrize("text", ["hunter2-blue-42", "Tr0ub4dor&3x", "correct-horse-battery-staple", "letmein123"])
def test_passwords_and_four_word_passphrases_are_not_ordinary_text(text: str) -> None:
    assert not looks_ordinary(text)
