"""Tests for `nighthawk.secrets.ContextRedaction`."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import pydantic
import pytest

import nighthawk as nh
from nighthawk import secrets
from nighthawk.secrets import DEFAULT_MASK_VALUE_PATTERNS, ContextRedaction
from nighthawk.secrets._scrubber import LogScrubber, SecretScrubber, collect_secret_values, scrub_exception

REDACTION = ContextRedaction()
PASSWORD = "hunter2-blue-42"
API_KEY = "sk-ant-api03-" + "Qm9vYmFyQmF6UXV4MTIzNDU2Nzg5"


def test_the_rules_are_still_importable_from_nighthawk_redaction() -> None:
    from nighthawk.redaction import DEFAULT_MASK_NAME_PATTERNS, ContextRedaction as Public

    assert Public is nh.ContextRedaction is ContextRedaction
    assert nh.redaction.DEFAULT_MASK_NAME_PATTERNS is DEFAULT_MASK_NAME_PATTERNS


@pytest.mark.parametrize(
    "name",
    ["openai_api_key", "OPENAI_API_KEY", "authToken", "db_password", "apiKeys", "client_secret", "sessionId",
     "passwd", "refresh_token", "AWS_SECRET_ACCESS_KEY", "credentials", "cookie", "pw", "db_pw", "passcode", "doorPasscode", "dsn",
     "password_reset_token", "token_type_secret", "api_key_v2", "pad_token_secret"],
)
def test_sensitive_looking_names_are_masked(name):
    assert REDACTION.is_sensitive_name(name)


@pytest.mark.parametrize(
    "name",
    ["keyboard", "monkey", "tokens_used", "max_tokens", "author", "keys", "passenger", "secretary", "data",
     "key", "sort_key", "primary_key", "key_column", "tokens", "password_policy", "token_budget", "token_ids",
     "token_type_ids", "jwt_algorithm", "auth_provider", "auth_enabled", "salt_rounds", "pad_token", "eos_token_id"],
)
def test_names_that_only_contain_a_sensitive_word_are_not_masked(name):
    assert not REDACTION.is_sensitive_name(name)


def test_allow_names_overrides_patterns():
    assert not ContextRedaction(allow_names=("sort_key",)).is_sensitive_name("sort_key")


def test_extra_mask_names_are_masked():
    assert ContextRedaction(extra_mask_names=("customer_ssn",)).is_sensitive_name("customer_ssn")


def test_disabled_redaction_masks_no_name():
    assert not ContextRedaction(enabled=False).is_sensitive_name("api_key")


@pytest.mark.parametrize(
    "secret",
    [
        "sk-abcdefghijklmnopqrstuvwx1234",
        "sk-proj-abcdefghijklmnopqrstuvwx1234",
        "sk-ant-api03-abcdefghijklmnopqrstuvwx",
        "AIza" + "A" * 35,
        "ghp_" + "a" * 36,
        "github_pat_" + "a" * 30,
        "AKIAABCDEFGHIJKLMNOP",
        "xoxb-1234567890-abcdef",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_scrub_text_replaces_credentials(secret):
    assert REDACTION.scrub_text(f"value: {secret} end") == "value: <masked> end"


def test_scrub_text_keeps_bearer_scheme():
    assert REDACTION.scrub_text("Authorization: Bearer abcdefghijklmnopqrstuv") == "Authorization: Bearer <masked>"


def test_scrub_text_masks_password_in_url():
    assert REDACTION.scrub_text("postgres://alice:hunter22@db/app") == "postgres://<masked>@db/app"


def test_scrub_text_masks_private_key_cut_before_its_end():
    assert REDACTION.scrub_text("k=-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN") == "k=<masked>"


def test_scrub_text_leaves_ordinary_text_unchanged():
    text = "the skeleton key opened a task-list of 20 items"
    assert REDACTION.scrub_text(text) == text


def test_scrub_text_uses_placeholder_literally():
    redaction = ContextRedaction(placeholder=r"[\1 hidden]")
    assert redaction.scrub_text("sk-abcdefghijklmnopqrstuvwx1234") == r"[\1 hidden]"


def test_disabled_redaction_scrubs_nothing():
    text = "sk-abcdefghijklmnopqrstuvwx1234"
    assert ContextRedaction(enabled=False).scrub_text(text) == text


def test_mask_value_masks_sensitive_name():
    assert REDACTION.mask_value("api_key", "k-4f9a2c7e") == "<masked>"


@pytest.mark.parametrize(
    ("name", "value"),
    [("password", 739144), ("passcode", "dragon"), ("client_secret", "sesame"), ("private_key", 0x4C0883A69102937D), ("session_id", 17_000_000_001),
     ("api_key", "AbCdEfGhIjKlMnOpQrSt"), ("token", "tok_4f9a"), ("credentials", {"user": "bob"}), ("auth", ["x"])],
)
def test_a_value_that_can_be_a_credential_stays_masked_under_its_name(name: str, value: object) -> None:
    # A person chooses a password (a word, a PIN); a number of 64 bits can be a key; mixed-case letters can be
    # random; a container is looked into by name, not shown.
    assert REDACTION.mask_value(name, value) == "<masked>"


@pytest.mark.parametrize(
    ("name", "value"),
    [("auth_enabled", True), ("salt", 16), ("token", 3), ("api_key", None), ("api_key", ""), ("auth", "basic"),
     ("jwt", "HS256"), ("token", "bearer"), ("oauth", "client_credentials"), ("access_key", 0.5)],
)
def test_a_value_that_cannot_be_a_credential_is_shown_under_a_key_or_token_name(name: str, value: object) -> None:
    assert REDACTION.mask_value(name, value) == value


def test_a_name_of_your_own_hides_any_value() -> None:
    redaction = ContextRedaction(mask_name_patterns=(*REDACTION.mask_name_patterns, r"ssn"), extra_mask_names=("pin_hint",))
    assert redaction.mask_value("patient_ssn", 123456789) == "<masked>"
    assert redaction.mask_value("pin_hint", True) == "<masked>"


def test_mask_value_masks_a_string_that_is_wholly_a_credential():
    assert REDACTION.mask_value("model", " sk-abcdefghijklmnopqrstuvwx1234\n") == "<masked>"


def test_mask_value_returns_the_same_object_otherwise():
    value = ["sk-abcdefghijklmnopqrstuvwx1234"]
    assert REDACTION.mask_value("items", value) is value


def test_mask_value_keeps_text_that_only_contains_a_credential():
    text = "key is sk-abcdefghijklmnopqrstuvwx1234"
    assert REDACTION.mask_value(None, text) is text


def test_disabled_redaction_masks_no_value():
    assert ContextRedaction(enabled=False).mask_value("api_key", "x") == "x"


def test_invalid_pattern_is_rejected():
    with pytest.raises(ValueError, match=r"`ContextRedaction.mask_name_patterns` holds an invalid regex"):
        ContextRedaction(mask_name_patterns=("(",))


def test_an_invalid_pattern_added_to_the_default_ones_is_rejected():
    with pytest.raises(ValueError, match=r"`ContextRedaction.mask_value_patterns` holds an invalid regex"):
        ContextRedaction(mask_value_patterns=(*DEFAULT_MASK_VALUE_PATTERNS, "[a-"))


def test_a_default_redaction_compiles_its_patterns_on_first_use_not_when_made(monkeypatch):
    # A kernel makes one when `%load_ext` builds its executor; compiling the default patterns there cost 2-3 ms.
    compiled = []
    monkeypatch.setattr(secrets, "_name_matcher", lambda patterns: compiled.append(patterns))
    monkeypatch.setattr(secrets, "_value_matcher", lambda patterns: compiled.append(patterns))
    ContextRedaction()
    assert compiled == []


def test_a_bare_string_for_a_pattern_tuple_is_rejected():
    with pytest.raises(TypeError, match=r"`ContextRedaction.allow_names` must be a tuple of strings, got 'x'"):
        ContextRedaction(allow_names="x")  # type: ignore[arg-type]


def test_pattern_lists_are_stored_as_tuples():
    assert ContextRedaction(allow_names=["a"]).allow_names == ("a",)  # type: ignore[arg-type]


# --- secret values (nighthawk.secrets._scrubber) ---------------------------------------------------------------


@dataclass
class Settings:
    endpoint: str
    api_token: str


class Account(pydantic.BaseModel):
    owner: str
    secret: str


class Vault(pydantic.BaseModel):
    unseal: pydantic.SecretStr


class Client:
    def __init__(self) -> None:
        self.client_secret = "cs-9a8b7c6d5e"
        self.base_url = "https://api.example.test"


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("conn", {"password": "Tr0ub4dor&3x"}, "Tr0ub4dor&3x"),
        ("conn", {"pw": "correct-horse-9"}, "correct-horse-9"),
        ("door", {"passcode": "7391-4482"}, "7391-4482"),
        ("cfg", {"svc": [{"credentials": {"user": "mailer-bot"}}]}, "mailer-bot"),
        ("settings", Settings(endpoint="e", api_token="tok-live-7f3a"), "tok-live-7f3a"),
        ("account", Account(owner="ops", secret="quartz-lantern"), "quartz-lantern"),
        ("vault", Vault(unseal=pydantic.SecretStr("vault-unseal-k3y")), "vault-unseal-k3y"),
        ("dsn", "host=db password=Dsn-Pa55", "host=db password=Dsn-Pa55"),
        ("database_url", "postgresql://app:S3cret-Pw@db/app", "S3cret-Pw"),
        ("note", f"use {API_KEY} here", API_KEY),
    ],
)
def test_secret_values_are_collected_at_any_depth(name: str, value: object, secret: str) -> None:
    assert secret in collect_secret_values([(name, value)], REDACTION)


def test_an_objects_attributes_are_looked_into_like_a_dicts_items() -> None:
    # `getattr(client, "client_secret")` hands the model the bare text: it must be a secret of the step.
    assert collect_secret_values([("client", Client())], REDACTION) == {"cs-9a8b7c6d5e"}


def test_a_dict_met_first_under_an_innocent_name_is_secret_under_a_sensitive_one() -> None:
    database = {"user": "analyst-ro", "host": "db.internal"}
    found = collect_secret_values([("settings", {"db": database}), ("credentials", database)], REDACTION)
    assert found == {"analyst-ro", "db.internal"}


def test_innocent_values_next_to_secrets_are_not_collected() -> None:
    found = collect_secret_values([("conn", {"host": "db.internal", "password": PASSWORD})], REDACTION)
    assert found == {PASSWORD}


def test_values_shorter_than_six_characters_are_not_collected() -> None:
    # Masking every "abc" in all outgoing text would garble it; the prompt still masks the value by name.
    assert collect_secret_values([("pin_password", "abc12")], REDACTION) == frozenset()


def test_disabled_redaction_collects_nothing() -> None:
    assert collect_secret_values([("db_password", PASSWORD)], ContextRedaction(enabled=False)) == frozenset()


def test_scrubber_masks_the_json_escaped_form_of_a_secret() -> None:
    scrubber = SecretScrubber(values=frozenset({'pa"ss\\word'}))
    assert scrubber.scrub(json.dumps({"p": 'pa"ss\\word'})) == '{"p": "<masked>"}'


def test_scrubbing_twice_changes_nothing_more_even_for_a_secret_inside_the_placeholder() -> None:
    scrubber = SecretScrubber(values=frozenset({"masked", PASSWORD}))
    once = scrubber.scrub(f"pw {PASSWORD}")
    assert once == "pw <masked>" and scrubber.scrub(once) == once


def test_scrub_exception_masks_the_cause_chain() -> None:
    try:
        try:
            raise KeyError(f"no user for {PASSWORD}")
        except KeyError as inner:
            raise nh.ExecutionError("lookup failed") from inner
    except nh.ExecutionError as exc:
        scrub_exception(exc, SecretScrubber(values=frozenset({PASSWORD})))
        assert exc.__cause__ is not None and str(exc.__cause__) == "'no user for <masked>'"


def test_log_scrubber_outside_a_step_masks_credential_shapes() -> None:
    record = logging.LogRecord("nighthawk", logging.INFO, __file__, 1, "using %s", (API_KEY,), None)
    LogScrubber().filter(record)
    assert record.getMessage() == "using <masked>"


def test_a_scrubber_keeps_at_most_256_secret_values() -> None:
    scrubber = SecretScrubber(values=[f"pass-{i:04d}-x" for i in range(300)])
    assert len(scrubber.values) == 256


def test_a_text_found_clean_is_masked_once_the_step_meets_a_secret_it_holds() -> None:
    scrubber = SecretScrubber()
    text = "connecting with hunter2-blue-42 now"
    assert scrubber.scrub(text) == text
    scrubber.add(["hunter2-blue-42"])
    assert scrubber.scrub(text) == "connecting with <masked> now"
