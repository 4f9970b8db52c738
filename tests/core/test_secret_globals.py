"""Secrets a step meets through its module rather than through what the model asks for: a credential-named
module global that a helper function reads, and the values the fields of an f-string block interpolate."""

from __future__ import annotations

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor

DB_PASSWORD = "hunter7-green-19"
CONFIG = {"db": {"host": "db.internal", "password": "Tr0ub4dor-3x-lilac"}}
# Ordinary text under a credential name: not a secret to mask wherever it occurs.
AUTH = "enabled"


class Settings:
    def __init__(self) -> None:
        self.api_token = "tok-live-7f3a9c"


SETTINGS = Settings()


def describe_db() -> str:
    return f"db at db.internal, password {DB_PASSWORD}, auth {AUTH}"


def connect() -> None:
    raise ConnectionError(f"login refused for password {DB_PASSWORD}")


@nh.natural_function
def check(n: int) -> None:
    """natural
    Check the database for <n>.
    """


def _tool_result(expression: str) -> str:
    executor, script = scripted_executor([call("nh_eval", expression=expression)], [finish()])
    with nh.run(executor):
        check(1)
    (result,) = script.last_tool_results()
    return result


# --- module globals a helper reads ------------------------------------------------------------------


def test_a_module_password_a_helper_returns_is_masked_in_the_tool_result() -> None:
    result = _tool_result("describe_db()")
    assert DB_PASSWORD not in result and "password <masked>" in result


def test_a_module_password_in_a_helpers_exception_is_masked_in_the_tool_error() -> None:
    result = _tool_result("connect()")
    assert DB_PASSWORD not in result and "login refused for password <masked>" in result


def test_ordinary_text_under_a_credential_named_module_global_reaches_the_model() -> None:
    assert "auth enabled" in _tool_result("describe_db()")


# --- the fields of an f-string block ----------------------------------------------------------------


@nh.natural_function
def log_in_with_module_password(n: int) -> None:
    f"""natural
    Log in with {DB_PASSWORD} for <n>.
    """


@nh.natural_function
def log_in_with_config_key(n: int) -> None:
    f"""natural
    Log in with {CONFIG["db"]["password"]} for <n>.
    """


@nh.natural_function
def log_in_with_whole_config(n: int) -> None:
    f"""natural
    Log in with {CONFIG} for <n>.
    """


@nh.natural_function
def log_in_with_settings_attribute(n: int) -> None:
    f"""natural
    Log in with {SETTINGS.api_token} for <n>.
    """


@nh.natural_function
def log_in_with_upper_password(n: int) -> None:
    f"""natural
    Log in with {DB_PASSWORD.upper()} for <n>.
    """


def _prompt(block: object) -> str:
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        block(1)  # type: ignore[operator]
    return " ".join(str(getattr(part, "content", "")) for part in script.seen[0][-1].parts)


@pytest.mark.parametrize(
    ("block", "secret"),
    [
        (log_in_with_module_password, DB_PASSWORD),
        (log_in_with_upper_password, DB_PASSWORD.upper()),
    ],
    ids=["name", "method-call"],
)
def test_a_credential_named_global_in_an_fstring_field_is_masked_in_the_prompt(block: object, secret: str) -> None:
    prompt = _prompt(block)
    assert secret not in prompt and "Log in with <masked> for" in prompt


@pytest.mark.parametrize(
    ("block", "secret"),
    [
        (log_in_with_config_key, "Tr0ub4dor-3x-lilac"),
        (log_in_with_whole_config, "Tr0ub4dor-3x-lilac"),
        (log_in_with_settings_attribute, "tok-live-7f3a9c"),
    ],
    ids=["constant-key-path", "whole-dict", "attribute-path"],
)
def test_a_credential_keyed_value_inside_an_fstring_field_is_masked_in_the_prompt(block: object, secret: str) -> None:
    prompt = _prompt(block)
    assert secret not in prompt and "<masked>" in prompt
