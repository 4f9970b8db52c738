"""Credential names written short, in other languages or as one word are recognised; innocent names that only
contain such a short word are not.

Each name is a key of a dict the step reads (`{"user": "app", KEY: "Tr0ub4dor&3x"}`); a scripted model prints
the dict, and the prompt and the tool result it receives are searched for the value.
"""

from __future__ import annotations

import json

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor

CHOSEN_TEXT = "Tr0ub4dor&3x"  # under a neutral name: see test_secret_config_text.py


@nh.natural_function
def inspect_record(record: dict) -> None:
    """natural
    Inspect <record>.
    """


def _run(key: str) -> tuple[str, str]:
    """The prompt and the `str(record)` tool result a model receives for `{"user": "app", key: CHOSEN_TEXT}`."""
    executor, script = scripted_executor([call("nh_eval", expression="str(record)")], [finish()])
    with nh.run(executor):
        inspect_record({"user": "app", key: CHOSEN_TEXT})
    (result,) = script.last_tool_results()
    return str(script.seen[0][0].parts[-1].content), json.loads(result)["value"]


CREDENTIAL_KEYS = [
    "pass", "pin", "user_pin", "PIN_CODE", "PGPASS", "PGPASSWORD", "privkey", "hmac_key", "otp", "sid", "sas",
    "sig", "refresh", "passwort", "mot_de_passe", "db_pass",
]


@pytest.mark.parametrize("key", CREDENTIAL_KEYS)
def test_a_value_under_a_short_or_foreign_credential_name_is_masked(key: str) -> None:
    prompt, result = _run(key)
    assert CHOSEN_TEXT not in prompt and CHOSEN_TEXT not in result
    assert result == f"{{'user': 'app', {key!r}: '<masked>'}}"


INNOCENT_KEYS = [
    "spinner", "pinned", "passenger", "signal", "considered", "pin_memory", "pass_rate", "pass_at_k", "sig_filter",
    "sid_column", "refresh_interval", "bypass", "sasl_mechanism",
]


@pytest.mark.parametrize("key", INNOCENT_KEYS)
def test_a_name_that_only_contains_a_short_credential_word_is_not_a_credential_name(key: str) -> None:
    _, result = _run(key)
    assert result == f"{{'user': 'app', {key!r}: {CHOSEN_TEXT!r}}}"


def test_a_signal_array_under_sig_is_shown() -> None:
    # A signature or a session id is text: a list of samples under `sig` is data.
    rules = nh.ContextRedaction()
    assert rules.is_sensitive_name("sig") and not rules.hides("sig", [0.1, 0.4, 0.2])
    assert rules.hides("sig", CHOSEN_TEXT)
