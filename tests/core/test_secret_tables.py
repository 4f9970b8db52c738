"""Secrets in pandas tables, seen from a notebook user's side: the cells of a credential-named column are
masked in the prompt and in tool results, its dtype stays visible, and ordinary analytics data (serial
identifiers, a `token` column of words) is not masked."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import nighthawk as nh
from nighthawk.secrets._scrubber import collect_secret_values
from nighthawk.secrets import looks_ordinary
from scripting import call, finish, scripted_executor

# Not under a credential name: a credential-named global of this module would be masked anyway.
HIDDEN = ["hunter2-blue-42", "Tr0ub4dor&3x"]


def users() -> pd.DataFrame:
    return pd.DataFrame({"name": ["ann", "bob"], "password": HIDDEN})


def clicks() -> pd.DataFrame:
    return pd.DataFrame({"session_id": [f"s-{i:06d}" for i in range(1_000)], "n": range(1_000)})


def words() -> pd.DataFrame:
    return pd.DataFrame({"token": ["The", "quick", "brown-fox", "jumps"]})


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


# --- a password column ---------------------------------------------------------------------------


def test_a_password_column_keeps_its_dtype_in_the_prompt() -> None:
    prompt, _ = run(look, users(), "1")
    dtype = str(users().dtypes["password"])  # `object` or `str`, by pandas version
    assert f'"password":"{dtype}"}}' in prompt  # its dtype only: what it holds is the secret


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


def test_a_table_contributes_the_leading_64_cells_of_its_password_column_and_nothing_else() -> None:
    passwords = [f"Zq{i}x!Lm{i}#w" for i in range(1_000)]
    table = pd.DataFrame({"password": passwords, "note": [f"Nt{i}y!Qp{i}%k" for i in range(1_000)]})
    assert collect_secret_values([("table", table)], nh.ContextRedaction()) == set(passwords[:64])


# --- ordinary analytics data ---------------------------------------------------------------------


def test_session_ids_of_a_clicks_table_are_shown_alike_in_the_prompt_and_in_a_list_result() -> None:
    prompt, (_, listed) = run(look, clicks(), "table.head(3).to_dict('records')", "table.session_id.tolist()[:3]")
    assert '["s-000000",0]' in prompt
    assert value_of(listed) == ["s-000000", "s-000001", "s-000002"]


def test_a_hyphenated_word_of_a_token_column_is_shown_alike_in_the_prompt_and_in_a_list_result() -> None:
    prompt, (listed,) = run(look, words(), "table.token.tolist()[:4]")
    assert '["brown-fox"]' in prompt
    assert value_of(listed) == ["The", "quick", "brown-fox", "jumps"]


def test_a_hyphenated_word_of_a_token_column_is_not_masked_in_later_results() -> None:
    _, (_, later) = run(look, words(), "table.token.tolist()", "'a brown-fox jumps'")
    assert value_of(later) == "a brown-fox jumps"


def test_a_token_column_of_words_keeps_its_dtype_in_the_prompt() -> None:
    prompt, _ = run(look, words(), "1")
    assert f'"columns":{{"token":"{words().dtypes["token"]}"}}' in prompt


@pytest.mark.parametrize("text", ["s-000123", "user_42", "order-2024-001", "INV#0042", "aaaa-aaaa"])
def test_serial_identifiers_and_text_of_few_characters_are_ordinary(text: str) -> None:
    assert looks_ordinary(text)


@pytest.mark.parametrize("text", ["hunter2-blue-42", "Tr0ub4dor&3x", "correct-horse-battery-staple", "quartz-lantern", "7391-4482"])
def test_passwords_passphrases_and_pins_are_not_ordinary(text: str) -> None:
    assert not looks_ordinary(text)


# --- passwords in other places of a table -------------------------------------------------------------


def test_a_password_column_under_a_multi_level_name_is_masked() -> None:
    table = pd.DataFrame({("creds", "user"): ["ann", "bob"], ("creds", "password"): HIDDEN})
    prompt, (result,) = run(look, table, "table.to_string()")
    assert not any(secret in prompt or secret in result for secret in HIDDEN)
    assert "ann" in result


def test_passwords_made_the_index_are_masked() -> None:
    prompt, (result,) = run(look, users().set_index("password"), "table.to_string()")
    assert not any(secret in prompt or secret in result for secret in HIDDEN)
    assert "ann" in result


def test_a_password_inside_a_column_of_dicts_is_masked() -> None:
    table = pd.DataFrame({"name": ["ann", "bob"], "login": [{"user": "ann", "password": secret} for secret in HIDDEN]})
    prompt, (result,) = run(look, table, "' / '.join(' '.join(login.values()) for login in table['login'])")
    assert not any(secret in prompt or secret in result for secret in HIDDEN)
    assert "ann" in result


def test_an_index_of_ordinary_names_stays_shown() -> None:
    prompt, (result,) = run(look, users().drop(columns="password").set_index("name"), "table.to_string()")
    assert "ann" in result and "bob" in result
